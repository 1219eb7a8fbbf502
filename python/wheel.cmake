# The Python wheel's contents, when scikit-build-core drives the build (`pip install .`, `python -m build`):
# libtrireme.so beside the package's modules, where trireme._lib looks first, and the `trireme` command in the
# package's bin/ (python -m trireme runs it). The install prefix is the package folder (pyproject.toml's
# wheel.install-dir). Only the real file of the library goes in, under the plain name: a wheel is a zip, which
# would hold each soname link as a second copy.
#
# TRIREME_PYTHON_PREBUILT=<a build tree> takes both from a build already made (make test-python builds the wheel
# from the library the C tests ran against, instead of compiling everything again); the top-level list then
# stops after this file.
if(TRIREME_PYTHON_PREBUILT)
  set(_lib ${TRIREME_PYTHON_PREBUILT}/libtrireme.so.${PROJECT_VERSION})
  set(_cli ${TRIREME_PYTHON_PREBUILT}/cli/trireme)
  foreach(f ${_lib} ${_cli})
    if(NOT EXISTS ${f})
      message(FATAL_ERROR "TRIREME_PYTHON_PREBUILT=${TRIREME_PYTHON_PREBUILT}: ${f} is missing (build that tree first)")
    endif()
  endforeach()
  install(FILES ${_lib} DESTINATION . RENAME libtrireme.so)
  install(PROGRAMS ${_cli} DESTINATION bin)
else()
  install(FILES $<TARGET_FILE:trireme> DESTINATION . RENAME libtrireme.so)
  install(PROGRAMS $<TARGET_FILE:trireme_cli> DESTINATION bin)
endif()
