# packaging.cmake -- `cpack -G DEB` in the build folder makes a Debian package
# of everything `cmake --install` installs, under prefix /usr whatever prefix
# was configured: bfeedd, bfeed, bfeed-train, libbfeed (with its soname) and
# its header and bfeed.pc, the units, the sysusers.d file, the manual pages,
# and /etc/bfeed/bfeedd.conf as a conffile. Included by the top CMakeLists.txt.
set(CPACK_PACKAGE_NAME bfeed)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "bfeed maintainers <bfeed@example.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "input-pipeline daemon serving bfloat16 training batches")
set(CPACK_PACKAGE_DESCRIPTION "bfeedd decodes image and text datasets, crops, resizes, normalizes
and casts them to bfloat16 on its own cores, and streams ready batches over
a socket to training jobs, which link libbfeed. Batches are a pure function
of the dataset, options, seed, epoch and batch index.")
set(CPACK_GENERATOR DEB)
# The files are installed as for prefix /usr (DESTDIR staging), so that
# cmake/install_paths.cmake puts the configuration in /etc/bfeed.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.invalid/bfeed")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# conffiles: /etc/bfeed/bfeedd.conf; postinst: the bfeed group for the
# socket; postrm: the cache on purge; shlibs: libbfeed's soname, for
# dpkg-shlibdeps of programs built on it; triggers: ldconfig (cpack's own
# shlibs handling would call ldconfig from maintainer scripts instead, which
# Debian no longer wants).
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/shlibs.in ${PROJECT_BINARY_DIR}/packaging/shlibs @ONLY)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst ${PROJECT_SOURCE_DIR}/packaging/debian/postrm
    ${PROJECT_SOURCE_DIR}/packaging/debian/triggers ${PROJECT_BINARY_DIR}/packaging/shlibs)
# Debian's policy for what cmake installs plainly: manual pages and the
# changelog compressed, a copyright file (CPACK_-prefixed: cpack passes those on).
set(CPACK_BFEED_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging/debian)
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/packaging/packaging_prebuild.cmake)
include(CPack)
