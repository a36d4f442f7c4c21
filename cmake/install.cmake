# Installation in FHS places and the Debian package (cpack -G DEB, `make deb`).
# docs/operations.md "Installing" lists what goes where.
include(GNUInstallDirs)

install(TARGETS ckptmon RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The unit names the binary as installed: systemd/ckptmon.service says
# /usr/bin/ckptmon (the package's path); installed under another prefix the
# path is rewritten at install time, so `cmake --install --prefix` and cpack
# (whose prefix is /usr) both get a unit that starts the binary they install.
install(CODE "
  file(READ \"${CMAKE_SOURCE_DIR}/systemd/ckptmon.service\" _ckptmon_unit)
  string(REPLACE \"/usr/bin/ckptmon \" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/ckptmon \"
         _ckptmon_unit \"\${_ckptmon_unit}\")
  file(WRITE \"${CMAKE_BINARY_DIR}/installed/ckptmon.service\" \"\${_ckptmon_unit}\")
")
install(FILES ${CMAKE_BINARY_DIR}/installed/ckptmon.service DESTINATION lib/systemd/system)
