# The two commands of the README: `make run` (install what is missing, build, show the devices, run the
# conformance matrix and one op on the best device) and `make test` (build and pass the whole suite, including
# the AddressSanitizer + UndefinedBehaviorSanitizer run).
BUILD      ?= build
BUILD_ASAN ?= build-asan
JOBS       ?= $(shell nproc)
TRIREME    := $(BUILD)/cli/trireme
# Debian's interpreter, whose dist-packages hold the numpy and pytest that .ci/install-deps.sh installs (a
# python3 earlier on PATH, such as pyenv's, would not see them).
PYTHON     ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
VENV       := $(BUILD)/python-venv
WHEELHOUSE := .tools/wheels

.PHONY: all deps build build-asan run test test-main test-asan test-python gpu gpu-build clean

all: build

deps:
	./.ci/install-deps.sh

# The Release configuration (its -O3 brings warnings -O2 does not, and warnings are errors), with debug
# information for the test suite's backtraces.
$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O3 -DNDEBUG -g"

$(BUILD_ASAN)/CMakeCache.txt:
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DTRIREME_SANITIZE=ON

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

build-asan: $(BUILD_ASAN)/CMakeCache.txt
	cmake --build $(BUILD_ASAN) -j$(JOBS)

run: deps build
	$(TRIREME) devices
	$(TRIREME) conformance --device auto
	$(TRIREME) run matmul --m 1000 --n 781 --k 127 --epilogue gelu

test: deps test-main test-asan test-python

# Criterion prints each skipped case's reason at verbosity 1; report_skips.sh lists them after ctest, which would
# show a binary whose cases all skipped (every CUDA test without a driver) as passed and nothing more. The tests
# run $(JOBS) at a time (the slow executables as several entries each, tests/CMakeLists.txt); report_times.sh
# prints what each entry took.
test-main: build
	cd $(BUILD) && CRITERION_VERBOSITY_LEVEL=1 ctest --output-on-failure -j$(JOBS); s=$$?; \
	  $(CURDIR)/tests/report_skips.sh $(abspath $(BUILD)); $(CURDIR)/tests/report_times.sh $(abspath $(BUILD)) 12; \
	  exit $$s

# The sanitizer run uses the quick case list: the same checks on fewer shapes. It leaves out the entries
# labelled kernel_sweep (tests/CMakeLists.txt says which and why): the main run passes them, they take the host
# paths the quick conformance takes, and under ASan's allocator they spend their time inside the drivers
# (lavapipe, PoCL, rusticl, NVRTC), not in our code.
test-asan: build-asan
	cd $(BUILD_ASAN) && TRIREME_CONFORMANCE_QUICK=1 \
	  ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 CRITERION_VERBOSITY_LEVEL=1 ctest --output-on-failure \
	  -j$(JOBS) -LE kernel_sweep; s=$$?; $(CURDIR)/tests/report_skips.sh $(abspath $(BUILD_ASAN)); \
	  $(CURDIR)/tests/report_times.sh $(abspath $(BUILD_ASAN)) 8; exit $$s

# The Python package as a user gets it: a wheel built offline by `python -m build` with scikit-build-core from
# the wheelhouse .ci/install-deps.sh fills, installed into a fresh virtual environment (which sees the system's
# numpy and pytest), and its tests run against that installed package: the library and the `trireme` command
# inside the wheel. The wheel takes them from $(BUILD) (TRIREME_PYTHON_PREBUILT, python/wheel.cmake) instead of
# compiling them again; `pip install .` builds them from source. Any pytest failure fails the target,
# including status 5 (no tests collected).
test-python: build
	@test -n "$$(ls $(WHEELHOUSE)/scikit_build_core-*.whl 2>/dev/null)" || \
	  { echo "no scikit-build-core wheel in $(WHEELHOUSE): run ./.ci/install-deps.sh"; exit 1; }
	rm -rf $(VENV) $(VENV)-build $(BUILD)/python-dist
	$(PYTHON) -m venv --system-site-packages $(VENV)-build
	$(VENV)-build/bin/python -m pip install -q --no-index --find-links $(WHEELHOUSE) --disable-pip-version-check \
	  scikit-build-core
	$(VENV)-build/bin/python -m build --wheel --no-isolation --outdir $(BUILD)/python-dist \
	  -C cmake.define.TRIREME_PYTHON_PREBUILT=$(abspath $(BUILD)) -C build-dir=$(BUILD)/python-wheel .
	$(PYTHON) -m venv --system-site-packages $(VENV)
	$(VENV)/bin/python -m pip install -q --no-index --disable-pip-version-check $(BUILD)/python-dist/trireme-*.whl
	cd python/tests && TRIREME_BUILD_DIR=$(abspath $(BUILD)) $(abspath $(VENV))/bin/python -m pytest -q -rs \
	  -p no:cacheprovider .

# The GPU part (conformance on every GPU backend, then the benchmarks) from a carried build: see tools/gpu_run.sh.
gpu:
	tools/gpu_run.sh

# A release build to carry to the GPU machine, with the shared libraries it links beyond the C runtime beside it and the
# measuring tools (tools/) that some of gpu_run.sh's steps run; build-gpu-carry/ holds only what a run needs,
# stripped, the libraries as lib.tar.xz (gpu_run.sh unpacks it): the device tool carries at most 64 MiB, the
# tracked files and .gl/ included, and OpenBLAS alone is 35 MiB uncompressed.
gpu-build:
	cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DTRIREME_TESTS=OFF -DTRIREME_TOOLS=ON
	cmake --build build-gpu -j$(JOBS)
	mkdir -p build-gpu/lib && ldd build-gpu/libtrireme.so | \
	  awk '$$2 == "=>" && $$1 !~ /^(libc|libm|libgcc_s|libpthread|libdl|librt)\.so|^ld-linux/ {print $$3}' | \
	  xargs -r -I{} cp -L {} build-gpu/lib/
	rm -rf build-gpu-carry && mkdir -p build-gpu-carry/cli build-gpu-carry/tools build-gpu-carry/examples/custom_op && \
	  cp build-gpu/cli/trireme build-gpu-carry/cli/ && cp -a build-gpu/libtrireme.so* build-gpu/lib build-gpu-carry/ && \
	  cp build-gpu/examples/custom_op/libswiglu.so build-gpu-carry/examples/custom_op/ && \
	  find build-gpu/tools -maxdepth 1 -type f -perm -u+x -exec cp {} build-gpu-carry/tools/ \;
	strip --strip-unneeded build-gpu-carry/cli/trireme build-gpu-carry/libtrireme.so.*.*.* build-gpu-carry/tools/* \
	  build-gpu-carry/examples/custom_op/libswiglu.so
	tar -cJf build-gpu-carry/lib.tar.xz -C build-gpu-carry lib && rm -rf build-gpu-carry/lib

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
