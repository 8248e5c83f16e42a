# packaging_prebuild.cmake -- cpack runs this after installing into its staging
# folder and before building the .deb (CPACK_PRE_BUILD_SCRIPTS): it compresses
# the manual pages and adds the copyright and changelog files Debian asks for.
# cpack passes the variables set in packaging.cmake.
file(GLOB_RECURSE roots LIST_DIRECTORIES true "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/share/man")
if(NOT roots)
  message(FATAL_ERROR "packaging: no share/man below ${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
endif()
foreach(man IN LISTS roots)
  get_filename_component(usr_share "${man}" DIRECTORY)
  file(GLOB_RECURSE pages "${man}/*")
  foreach(p IN LISTS pages)
    execute_process(COMMAND gzip -9nf "${p}" RESULT_VARIABLE rc)
    if(rc)
      message(FATAL_ERROR "packaging: gzip ${p} failed")
    endif()
  endforeach()
  set(doc "${usr_share}/doc/${CPACK_PACKAGE_NAME}")
  file(MAKE_DIRECTORY "${doc}")
  file(COPY "${BFEED_PACKAGING_DIR}/copyright" DESTINATION "${doc}"
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  execute_process(COMMAND gzip -9nc "${BFEED_PACKAGING_DIR}/changelog" OUTPUT_FILE "${doc}/changelog.gz"
                  RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "packaging: gzip changelog failed")
  endif()
endforeach()
