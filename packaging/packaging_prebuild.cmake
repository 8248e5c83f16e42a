# packaging_prebuild.cmake -- cpack runs this after installing into its staging
# folder and before building the .deb (CPACK_PRE_BUILD_SCRIPTS): it compresses
# the manual pages and adds the copyright and changelog files Debian asks for.
# cpack passes the variables set in packaging.cmake.
set(usr_share "${CPACK_TEMPORARY_INSTALL_DIRECTORY}${CPACK_PACKAGING_INSTALL_PREFIX}/share")
file(GLOB_RECURSE pages "${usr_share}/man/*")
if(NOT pages)
  message(FATAL_ERROR "packaging: no manual pages below ${usr_share}/man")
endif()
foreach(p IN LISTS pages)
  if(NOT p MATCHES "\\.gz$")
    execute_process(COMMAND gzip -9nf "${p}" RESULT_VARIABLE rc)
    if(rc)
      message(FATAL_ERROR "packaging: gzip ${p} failed")
    endif()
  endif()
endforeach()
set(doc "${usr_share}/doc/${CPACK_PACKAGE_NAME}")
file(MAKE_DIRECTORY "${doc}")
file(COPY "${CPACK_BFEED_PACKAGING_DIR}/copyright" DESTINATION "${doc}"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
execute_process(COMMAND gzip -9nc "${CPACK_BFEED_PACKAGING_DIR}/changelog" OUTPUT_FILE "${doc}/changelog.gz"
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "packaging: gzip changelog failed")
endif()
