# MLX's C++ library and headers ship inside pip's `mlx` package (mlx[cpu] on Linux, Metal on macOS).
# `python -m mlx --cmake-dir` prints where its MLXConfig.cmake lives. Python is taken from
# TENSORFOLD_PYTHON, else the repo's .venv, else the first python3 on PATH.
if(NOT TENSORFOLD_PYTHON AND SKBUILD AND Python_EXECUTABLE)
  set(TENSORFOLD_PYTHON "${Python_EXECUTABLE}")  # pip's build environment, which has mlx
endif()
if(NOT TENSORFOLD_PYTHON)
  if(EXISTS "${CMAKE_SOURCE_DIR}/.venv/bin/python")
    set(TENSORFOLD_PYTHON "${CMAKE_SOURCE_DIR}/.venv/bin/python")
  else()
    find_program(TENSORFOLD_PYTHON NAMES python3 python)
  endif()
endif()
execute_process(COMMAND "${TENSORFOLD_PYTHON}" -m mlx --cmake-dir
                OUTPUT_VARIABLE _tf_mlx_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE _tf_mlx_rc ERROR_QUIET)
if(NOT _tf_mlx_rc EQUAL 0 OR NOT _tf_mlx_dir)
  message(FATAL_ERROR "TENSORFOLD_MLX is ON but `${TENSORFOLD_PYTHON} -m mlx --cmake-dir` failed. "
                      "Run scripts/bootstrap.sh (it installs mlx[cpu] into .venv) or pass -DTENSORFOLD_MLX=OFF.")
endif()
find_package(MLX CONFIG REQUIRED PATHS "${_tf_mlx_dir}" NO_DEFAULT_PATH)
set(TENSORFOLD_MLX_LIB_DIR "${_tf_mlx_dir}/lib")
message(STATUS "MLX ${MLX_VERSION} from ${_tf_mlx_dir}")

# Installed by pip into a venv, the binary sits in <venv>/bin and MLX in
# <venv>/lib/pythonX.Y/site-packages/mlx/lib: point the install rpath there, relative to the binary.
execute_process(COMMAND "${TENSORFOLD_PYTHON}" -c "import sys; print(f'python{sys.version_info[0]}.{sys.version_info[1]}')"
                OUTPUT_VARIABLE _tf_pyver OUTPUT_STRIP_TRAILING_WHITESPACE)
if(APPLE)
  set(TENSORFOLD_MLX_INSTALL_RPATH "@executable_path/../lib/${_tf_pyver}/site-packages/mlx/lib")
else()
  set(TENSORFOLD_MLX_INSTALL_RPATH "$ORIGIN/../lib/${_tf_pyver}/site-packages/mlx/lib")
endif()
