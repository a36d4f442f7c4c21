// Boost.Asio's implementation, compiled once for the whole program
// (BOOST_ASIO_SEPARATE_COMPILATION, set by CMakeLists.txt for ckptmon_daemon
// and everything that links it), with the TLS parts the daemon uses.
//
// g++ 12 reports -Wnull-dereference in scheduler::compensating_work_started()
// (boost/asio/detail/impl/scheduler.ipp): it dereferences this thread's
// call-stack entry, which exists whenever the scheduler runs an operation on
// the thread (its only caller is the epoll reactor completing one); the
// optimiser cannot know that. Only this file compiles that function, so only
// it ignores the warning.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#pragma GCC diagnostic pop
