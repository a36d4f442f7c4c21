# Installation in FHS places and the Debian package (cpack -G DEB, `make deb`).
# docs/operations.md "Installing" lists what goes where.
include(GNUInstallDirs)

# `cpack` and the install target install what was built; they do not build
# everything first (make test builds the daemon, not the unit tests, in the
# normal build directory, and test_deb.py packages it from there).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

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

# The example configuration is the conffile /etc/ckptmon/ckptmon.yml (always
# /etc, whatever the prefix, as the unit reads it there); dpkg keeps an
# operator's edits across upgrades (packaging/conffiles).
install(FILES ${CMAKE_SOURCE_DIR}/deploy/ckptmon.example.yml
        DESTINATION /etc/ckptmon RENAME ckptmon.yml)

# What an operator loads into Prometheus and Grafana, unedited.
install(FILES ${CMAKE_SOURCE_DIR}/grafana/ckptmon-dashboard.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ckptmon/grafana)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/grafana/provisioning
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ckptmon/grafana)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/deploy/prometheus/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ckptmon/prometheus
        FILES_MATCHING PATTERN "*.yml" PATTERN "tests" EXCLUDE)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/prometheus-scrape.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/ckptmon/prometheus)

# Documentation, the systemd drop-in examples and the Debian copyright and
# changelog (gzip -9n: reproducible, as lintian wants).
set(CKPTMON_DOCDIR ${CMAKE_INSTALL_DATADIR}/doc/ckptmon)
file(GLOB CKPTMON_DOCS ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CKPTMON_DOCS}
        ${CMAKE_SOURCE_DIR}/packaging/copyright DESTINATION ${CKPTMON_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/systemd/ckptmon.service.d-examples/
        DESTINATION ${CKPTMON_DOCDIR}/examples/systemd)
configure_file(${CMAKE_SOURCE_DIR}/packaging/changelog.in ${CMAKE_BINARY_DIR}/packaging/changelog @ONLY)
find_program(GZIP gzip REQUIRED)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/packaging/changelog.gz
  COMMAND ${GZIP} -9nc ${CMAKE_BINARY_DIR}/packaging/changelog > ${CMAKE_BINARY_DIR}/packaging/changelog.gz
  DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog VERBATIM)

# The man page is generated from --help and --version by help2man (Debian
# package help2man), so it cannot drift from the binary.
find_program(HELP2MAN help2man)
set(CKPTMON_PACKAGING_OUTPUTS ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
if(HELP2MAN)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/packaging/ckptmon.1.gz
    COMMAND ${HELP2MAN} --no-info --no-discard-stderr --section=1
            --name=monitor\ AI\ training\ checkpoint\ storage\ tiers\ for\ Prometheus
            --output=${CMAKE_BINARY_DIR}/packaging/ckptmon.1 $<TARGET_FILE:ckptmon>
    COMMAND ${GZIP} -9nf ${CMAKE_BINARY_DIR}/packaging/ckptmon.1
    DEPENDS ckptmon VERBATIM)
  list(APPEND CKPTMON_PACKAGING_OUTPUTS ${CMAKE_BINARY_DIR}/packaging/ckptmon.1.gz)
  install(FILES ${CMAKE_BINARY_DIR}/packaging/ckptmon.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "help2man not found: no man page (apt-get install help2man)")
endif()
add_custom_target(ckptmon_packaging ALL DEPENDS ${CKPTMON_PACKAGING_OUTPUTS})
install(FILES ${CMAKE_BINARY_DIR}/packaging/changelog.gz DESTINATION ${CKPTMON_DOCDIR})

# cpack -G DEB (from the build directory: `make deb`).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ckptmon)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "ckptmon maintainers <ckptmon-maintainers@example.org>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/ckptmon/ckptmon")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "monitor AI training checkpoint storage for Prometheus")
# CPack writes the summary as the synopsis line and indents this text below it.
set(CPACK_PACKAGE_DESCRIPTION "ckptmon watches the storage tiers that AI training jobs write their
checkpoints to (node-local staging, shared parallel and network file
systems) and exports Prometheus metrics and alerts about them: space
and time to full, drain backlog, partial and committed checkpoints, the
recovery point of every job and shard integrity.

The package ships a hardened systemd unit, an example configuration in
/etc/ckptmon, Prometheus rules and a Grafana dashboard in
/usr/share/ckptmon.")
# No maintainer scripts: the unit's DynamicUser= and StateDirectory= make
# systemd create the user and /var/lib/ckptmon (docs/operations.md).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)

# The integration tests install and package the build (test_deb.py,
# test_systemd_unit.py): what they install is built with the daemon.
add_dependencies(ckptmon_integration ckptmon_packaging)
