# install_paths.cmake -- runs at install time (install(SCRIPT)), for the files
# whose place or text depends on the prefix installed to, which may differ
# from the configured one (`cmake --install build --prefix DIR`, or cpack's
# /usr). Called by the top CMakeLists.txt, with BFEED_SRC, BFEED_GEN (a build folder),
# BFEED_BIN_REL, BFEED_UNITDIR_USR and BFEED_SYSUSERSDIR_USR set before it.
#
# Under prefix /usr (a distribution package) the configuration goes to
# /etc/bfeed and units and sysusers.d to systemd's own folders; under any
# other prefix everything stays below it: PREFIX/etc/bfeed,
# PREFIX/lib/systemd/system, PREFIX/lib/sysusers.d. The unit's ExecStart
# and --config name the installed files.
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
  set(BFEED_SYSCONFDIR /etc)
  set(unitdir "${BFEED_UNITDIR_USR}")
  set(sysusersdir "${BFEED_SYSUSERSDIR_USR}")
else()
  set(BFEED_SYSCONFDIR "${prefix}/etc")
  set(unitdir "${prefix}/lib/systemd/system")
  set(sysusersdir "${prefix}/lib/sysusers.d")
endif()
set(BFEED_BINDIR "${prefix}/${BFEED_BIN_REL}")

configure_file("${BFEED_SRC}/systemd/bfeedd.service.in" "${BFEED_GEN}/bfeedd.service" @ONLY)
file(INSTALL "${BFEED_GEN}/bfeedd.service" "${BFEED_SRC}/systemd/bfeedd.socket" DESTINATION "${unitdir}"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(INSTALL "${BFEED_SRC}/systemd/bfeed.sysusers" DESTINATION "${sysusersdir}" RENAME bfeed.conf
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(INSTALL "${BFEED_SRC}/conf/bfeedd.conf" DESTINATION "${BFEED_SYSCONFDIR}/bfeed"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
