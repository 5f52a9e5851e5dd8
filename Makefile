# kdgpu: exact kd-tree neighbour search for PostgreSQL, on the GPU and the CPU.
#
#   make && make install       the extension (kdgpu.so), and kdgpu_cuda.so
#                              when nvcc is found (NVCC=... to choose one;
#                              NVCC= builds without it, CPU only; V=1 shows
#                              the whole nvcc commands)
#   make installcheck          pg_regress suites against a running server
#   make tap-check             TAP suites: crash recovery, replicas (test/tap;
#                              run as a user initdb accepts, not root)
#   make prove-check           pgTAP suites (pg_prove) against a running server
#   make check-all             everything, on a throwaway server (test/run-all)
#   make engine-check          engine tests, no server (GPU too when present)
#   make engine-bench          engine benchmark (bench/README.md)
#   make cukd-bench            the GPU engine beside cudaKDTree (nvcc and a GPU)
#   make build/flat-compare-bin  flat kNN of vectors beside cuBLAS (nvcc)
#   make build/flat-compare-faiss-bin  the same, and FAISS on the CPUs
#   make ckdtree-bench         the CPU engine beside scipy's cKDTree, per core
#   make geo-check             PostGIS format decoder tests, no server
#   make fuzz FUZZ_SECONDS=60  libFuzzer + ASan/UBSan runs of test/fuzz (clang)
#   make fuzz-check            replay of the fuzzing corpus, gcc + ASan/UBSan
#   make fault-check           GPU absent / failing: the engine's fallbacks
#   make split-check           a tree split over several emulated devices
#   make build/split-bench-bin one tree on one GPU against all of a host's GPUs
#   make clean                 removes build/, where every build output lands
#   make soak-check            short load soak against a running server

# Every build output lands under build/ (B): objects and bitcode mirror the
# source tree (build/src/..., build/cuda/...), and the test and benchmark
# programs sit in build/ and build/test-bin/.  kdgpu.so alone stays at the
# top level: PGXS's Makefile.shlib links and installs $(MODULE_big).so from
# there, and moving it would mean replacing PGXS's install rules.
B = build

EXTENSION = kdgpu kdgpu_postgis
MODULE_big = kdgpu
PGFILEDESC = "kdgpu - exact kd-tree neighbour search on GPU and CPU"

# SQL scripts: sql/install/EXT.sql is the current install script of each
# extension, installed as EXT--<default_version>.sql (the .control file's);
# sql/updates/ holds the ALTER EXTENSION ... UPDATE steps from every
# released version, and the 0.1 install scripts, which are not current but
# the start of that chain: test/tap/008_upgrade.pl installs 0.1 and updates
# it, and a release that updates an older install must keep them.
ext_version = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(1).control)
DATA = $(sort $(wildcard sql/updates/*.sql))
DATA_built = $(foreach e,$(EXTENSION),$(B)/$(e)--$(call ext_version,$(e)).sql)

# the source lists are every file under src/, so that a new folder needs
# no edit here; the engine (src/engine) builds alone as well, for the tests
ENGINE_SRCS = $(sort $(shell find src/engine -name '*.c'))
EXT_SRCS = $(sort $(shell find src -name '*.c' -not -path 'src/engine/*'))
EXT_HDRS = $(shell find src -name '*.h' -not -path 'src/engine/*')
OBJS = $(patsubst %.c,$(B)/%.o,$(EXT_SRCS) $(ENGINE_SRCS))

PROVE_TESTS = test/tap/*.pl
PG_CONFIG ?= pg_config
# the PostGIS suites (sql/4*, test/pgtap/postgis_*) run only
# where PostGIS is installed
HAVE_POSTGIS := $(wildcard $(shell $(PG_CONFIG) --sharedir)/extension/postgis.control)
ALL_REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS = $(if $(HAVE_POSTGIS),$(ALL_REGRESS),$(filter-out 4%,$(ALL_REGRESS)))
# pg_regress writes its results under build/
REGRESS_OPTS = --outputdir=$(B)/regress
# isolation tester specs (test/isolation): scans held open across VACUUM
ISOLATION = $(patsubst test/isolation/specs/%.spec,%,$(sort $(wildcard test/isolation/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test/isolation --outputdir=$(B)/isolation

# float8 results must be bit-identical to the GPU's: no contraction to FMA
ENGINE_CFLAGS = -O2 -std=gnu99 -ffp-contract=off -pthread
PG_CFLAGS = $(ENGINE_CFLAGS) -Wno-declaration-after-statement
PG_CPPFLAGS = -I$(srcdir)/src -I$(libpq_srcdir)
# not libpq: foreign partitions call it through postgres_fdw's (src/shard/remote_libpq.h);
# only what PostgreSQL looks up by name is exported (src/kdgpu.map)
SHLIB_LINK = -ldl -pthread -Wl,--version-script=$(srcdir)/src/kdgpu.map
EXTRA_CLEAN = $(B)

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# objects and bitcode under build/, in place of PGXS's beside the sources
$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CPPFLAGS) -c -o $@ $<

$(B)/%.bc: %.c
	@mkdir -p $(@D)
	$(COMPILE.c.bc) -o $@ $<

# each versioned install script is a copy of its extension's current one
$(foreach e,$(EXTENSION),$(eval $(B)/$(e)--$(call ext_version,$(e)).sql: sql/install/$(e).sql))
$(DATA_built):
	@mkdir -p $(@D)
	cp $< $@

# ---- GPU object ------------------------------------------------------------
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_SO = $(B)/kdgpu_cuda.so
CUDA_SRCS = $(sort $(wildcard cuda/*.cu))
CUDA_OBJS = $(patsubst %.cu,$(B)/%.o,$(CUDA_SRCS))
ENGINE_HDRS = $(shell find src/engine -name '*.h')
CUDA_HDRS = $(wildcard cuda/*.h cuda/*.cuh) $(ENGINE_HDRS)
NVCC_FLAGS = -O3 -std=c++17 --fmad=false -Xcompiler -fPIC,-fvisibility=hidden \
	-cudart static \
	-gencode arch=compute_80,code=sm_80 \
	-gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90

ifneq ($(NVCC),)
ifneq ($(CUDA_SRCS),)
all: $(CUDA_SO)
install: install-cuda
endif
endif

# one object per .cu file, so that make -j compiles them side by side: the
# kernels are static to their file and the files call each other only on
# the host, so no relocatable device code (-rdc) is needed.  Each step
# prints one line; make V=1 prints the whole commands.
NVCC_SAY = $(if $(filter 1,$(V)),@true,@echo)
NVCC_Q = $(if $(filter 1,$(V)),,@)

$(B)/cuda/%.o: cuda/%.cu $(CUDA_HDRS)
	@mkdir -p $(@D)
	$(NVCC_SAY) "NVCC $<"
	$(NVCC_Q)$(NVCC) $(NVCC_FLAGS) -c -o $@ $<

# only what cuda/exports.map names is exported
$(CUDA_SO): $(CUDA_OBJS) cuda/exports.map
	$(NVCC_SAY) "NVCC -shared $@"
	$(NVCC_Q)$(NVCC) $(NVCC_FLAGS) -shared -o $@ $(CUDA_OBJS) \
		-Xlinker --version-script=cuda/exports.map

install-cuda: $(CUDA_SO)
	$(INSTALL_SHLIB) $(CUDA_SO) '$(DESTDIR)$(pkglibdir)/kdgpu_cuda.so'

# ---- engine tests and benchmark (no server) --------------------------------
ENGINE_TEST_SRCS = $(sort $(wildcard test/engine/*.c))

$(B)/engine-test: $(ENGINE_SRCS) $(ENGINE_TEST_SRCS) $(ENGINE_HDRS) test/engine/*.h
	@mkdir -p $(@D)
	$(CC) $(ENGINE_CFLAGS) -Wall -Isrc/engine -o $@ $(ENGINE_TEST_SRCS) $(ENGINE_SRCS) -ldl -lm

BENCH_TIME_SRCS = bench/bench_time.c bench/bench_time.h
$(B)/engine-bench-bin: $(ENGINE_SRCS) bench/engine_bench.c $(BENCH_TIME_SRCS) $(ENGINE_HDRS) test/engine/*.h
	@mkdir -p $(@D)
	$(CC) $(ENGINE_CFLAGS) -O3 -march=x86-64-v2 -Wall -Isrc/engine -Itest/engine -Ibench -o $@ bench/engine_bench.c bench/bench_time.c test/engine/datagen.c $(ENGINE_SRCS) -ldl -lm

# one tree over every GPU of the host against one GPU (bench/README.md)
$(B)/split-bench-bin: $(ENGINE_SRCS) bench/split_bench.c $(BENCH_TIME_SRCS) $(ENGINE_HDRS) test/engine/*.h
	@mkdir -p $(@D)
	$(CC) $(ENGINE_CFLAGS) -O3 -march=x86-64-v2 -Wall -Isrc/engine -Itest/engine -Ibench -o $@ bench/split_bench.c bench/bench_time.c test/engine/datagen.c $(ENGINE_SRCS) -ldl -lm

# the engine beside scipy's cKDTree per core, with the extension's own
# optimisation flags (bench/README.md; needs python3-scipy)
BENCH_SET_SRCS = bench/bench_sets.c bench/bench_time.c test/engine/datagen.c
$(B)/cpu-knn-lib.so: $(ENGINE_SRCS) bench/cpu_knn_lib.c $(BENCH_SET_SRCS) $(ENGINE_HDRS) bench/bench_sets.h test/engine/*.h
	@mkdir -p $(@D)
	$(CC) $(ENGINE_CFLAGS) -Wall -fPIC -shared -Isrc/engine -Itest/engine -o $@ bench/cpu_knn_lib.c $(BENCH_SET_SRCS) $(ENGINE_SRCS) -ldl -lm

ckdtree-bench: $(B)/cpu-knn-lib.so
	/usr/bin/python3 bench/ckdtree-compare --lib $(CURDIR)/$(B)/cpu-knn-lib.so $(CKDTREE_ARGS)

# the GPU engine beside cudaKDTree, built from the peers' copy when nvcc is
# here; without a GPU it says so and exits 0 (bench/README.md)
CUKD_DIR ?= ../shared/peers/cudaKDTree
$(B)/cukd-compare-bin: bench/cukd_compare.cu $(BENCH_SET_SRCS) $(ENGINE_SRCS) $(ENGINE_HDRS) bench/bench_sets.h test/engine/*.h
	@mkdir -p $(@D)
	$(NVCC) -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -cudart static \
		-I$(CUKD_DIR) -Isrc/engine -Itest/engine -Ibench -Xcompiler -ffp-contract=off,-pthread \
		-o $@ bench/cukd_compare.cu $(BENCH_SET_SRCS) $(ENGINE_SRCS) -ldl -lm

# kdgpu's flat kNN of vectors beside a float32 cuBLAS brute force
# (bench/README.md); cuBLAS is linked from the CUDA toolkit's own copy
$(B)/flat-compare-bin: bench/flat_compare.cu $(BENCH_TIME_SRCS) $(ENGINE_SRCS) $(ENGINE_HDRS) test/engine/*.h
	@mkdir -p $(@D)
	$(NVCC) -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -cudart static \
		-Isrc/engine -Itest/engine -Ibench -Xcompiler -ffp-contract=off,-pthread \
		-o $@ bench/flat_compare.cu bench/bench_time.c test/engine/datagen.c $(ENGINE_SRCS) -lcublas -ldl -lm

# the same with FAISS's exact IndexFlatL2 on the host's CPUs as a third
# peer: Debian's libfaiss-dev and libopenblas-dev, linked statically (with
# OpenMP's runtime) so that the binary runs where they are not installed
FAISS_LIBS = /usr/lib/x86_64-linux-gnu/libfaiss.a \
	/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.a \
	$(shell $(CC) -print-file-name=libgomp.a)
$(B)/flat-compare-faiss-bin: bench/flat_compare.cu $(BENCH_TIME_SRCS) $(ENGINE_SRCS) $(ENGINE_HDRS) test/engine/*.h
	@mkdir -p $(@D)
	$(NVCC) -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -cudart static -DKD_WITH_FAISS \
		-Isrc/engine -Itest/engine -Ibench -Xcompiler -ffp-contract=off,-pthread,-fopenmp \
		-o $@ bench/flat_compare.cu bench/bench_time.c test/engine/datagen.c $(ENGINE_SRCS) \
		$(FAISS_LIBS) -lcublas -lgfortran -ldl -lm

ifeq ($(NVCC),)
cukd-bench:
	@echo "cukd-bench skipped: no nvcc (NVCC=...), so cudaKDTree cannot be built here"
else ifeq ($(wildcard $(CUKD_DIR)/cukd/knn.h),)
cukd-bench:
	@echo "cukd-bench skipped: no cudaKDTree in $(CUKD_DIR) (CUKD_DIR=...)"
else
cukd-bench: $(B)/cukd-compare-bin $(if $(CUDA_SRCS),$(CUDA_SO))
	KDGPU_CUDA_LIB=$(CURDIR)/$(CUDA_SO) $(B)/cukd-compare-bin $(CUKD_ARGS)
endif

engine-check: $(B)/engine-test $(if $(NVCC),$(if $(CUDA_SRCS),$(CUDA_SO)))
	KDGPU_CUDA_LIB=$(CURDIR)/$(CUDA_SO) $(B)/engine-test

engine-bench: $(B)/engine-bench-bin $(if $(NVCC),$(if $(CUDA_SRCS),$(CUDA_SO)))
	KDGPU_CUDA_LIB=$(CURDIR)/$(CUDA_SO) $(B)/engine-bench-bin $(BENCH_ARGS)

# ---- PostGIS format decoder tests (no server) -----------------------------
GEO_SRCS = $(sort $(wildcard src/geo/*.c))

# with the sanitizers of the fuzzing replay: a decoder reading past its
# buffer fails the run
$(B)/geo-test: $(GEO_SRCS) $(wildcard src/geo/*.h) test/geo/test_gserialized.c
	@mkdir -p $(@D)
	$(CC) $(ENGINE_CFLAGS) -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-Wall -Isrc/geo -o $@ test/geo/test_gserialized.c $(GEO_SRCS) -lm

geo-check: $(B)/geo-test
	$(B)/geo-test

# PostgreSQL::Test::Cluster suites: servers of their own, in tmp_check/
tap-check: $(B)/test-bin/emulated_cuda.so
	$(prove_installcheck)

.PHONY: engine-check engine-bench ckdtree-bench cukd-bench geo-check install-cuda tap-check

# PGXS does not track headers: rebuild the objects when they change
$(patsubst %.c,$(B)/%.o,$(EXT_SRCS)): $(EXT_HDRS) $(ENGINE_HDRS)
$(patsubst %.c,$(B)/%.o,$(ENGINE_SRCS)): $(ENGINE_HDRS)

# ---- fuzzing (test/fuzz/README.md) ------------------------------------------
# make fuzz runs each harness for FUZZ_SECONDS under libFuzzer (clang); new
# crashes land in test/fuzz/corpus/<harness>/ and so join the replay, which
# make fuzz-check runs with plain $(CC) and the same sanitizers.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS = -g -O1 -std=gnu99 -ffp-contract=off -pthread \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-Isrc -Isrc/engine -Itest/engine
FUZZ_GEO_SRCS = src/geo/kd_gserialized.c
FUZZ_HARNESSES = engine gserialized
fuzz_engine_SRCS = test/fuzz/fuzz_engine.c test/engine/oracle.c $(ENGINE_SRCS)
fuzz_gserialized_SRCS = test/fuzz/fuzz_gserialized.c $(FUZZ_GEO_SRCS)

$(B)/test-bin/fuzz-engine: $(fuzz_engine_SRCS) $(ENGINE_HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $(fuzz_engine_SRCS) -ldl -lm
$(B)/test-bin/replay-engine: test/fuzz/replay.c $(fuzz_engine_SRCS) $(ENGINE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FUZZ_FLAGS) -o $@ test/fuzz/replay.c $(fuzz_engine_SRCS) -ldl -lm
$(B)/test-bin/fuzz-gserialized: $(fuzz_gserialized_SRCS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $(fuzz_gserialized_SRCS) -lm
$(B)/test-bin/replay-gserialized: test/fuzz/replay.c $(fuzz_gserialized_SRCS)
	@mkdir -p $(@D)
	$(CC) $(FUZZ_FLAGS) -o $@ test/fuzz/replay.c $(fuzz_gserialized_SRCS) -lm

fuzz: $(FUZZ_HARNESSES:%=$(B)/test-bin/fuzz-%)
	@for h in $(FUZZ_HARNESSES); do \
		mkdir -p .dev/fuzz/$$h && \
		echo "== fuzz $$h for $(FUZZ_SECONDS) s" && \
		$(B)/test-bin/fuzz-$$h -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
			-artifact_prefix=test/fuzz/corpus/$$h/ .dev/fuzz/$$h test/fuzz/corpus/$$h \
			2>&1 | grep -vE '^#[0-9]+.*(NEW|REDUCE|pulse)' || exit 1; \
	done

fuzz-check: $(FUZZ_HARNESSES:%=$(B)/test-bin/replay-%)
	@rc=0; for h in $(FUZZ_HARNESSES); do \
		echo "== replay of test/fuzz/corpus/$$h"; \
		$(B)/test-bin/replay-$$h test/fuzz/corpus/$$h || rc=1; \
	done; exit $$rc

.PHONY: fuzz fuzz-check

# ---- GPU faults without a GPU (test/fault) ----------------------------------
# fault_test runs against fake_cuda.so, a GPU library that fails on purpose,
# and with no usable library at all; test/gpu/faults.sh is the GPU's part.
$(B)/test-bin/fake_cuda.so: test/fault/fake_cuda.c $(ENGINE_HDRS)
	@mkdir -p $(@D)
	$(CC) -O1 -g -std=gnu99 -Wall -shared -fPIC -o $@ test/fault/fake_cuda.c
# emulated_cuda.so: a GPU library that works (the CPU engine behind the GPU
# table), for the GPU service's TAP suite (test/tap/009_service.pl)
$(B)/test-bin/emulated_cuda.so: test/fault/emulated_cuda.c $(ENGINE_SRCS) $(ENGINE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ENGINE_CFLAGS) -g -Wall -shared -fPIC -fvisibility=hidden -Wl,-Bsymbolic \
		-Isrc/engine -o $@ test/fault/emulated_cuda.c $(ENGINE_SRCS) -ldl -lm
$(B)/test-bin/fault-test: test/fault/fault_test.c $(ENGINE_SRCS) $(ENGINE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ENGINE_CFLAGS) -g -fsanitize=address,undefined -Wall -Isrc/engine \
		-o $@ test/fault/fault_test.c $(ENGINE_SRCS) -ldl -lm

fault-check: $(B)/test-bin/fault-test $(B)/test-bin/fake_cuda.so
	@rc=0; \
	echo "== a GPU that fails"; \
	KDGPU_CUDA_LIB=$(CURDIR)/$(B)/test-bin/fake_cuda.so $(B)/test-bin/fault-test fake || rc=1; \
	echo "== KDGPU_FAULT=absent"; \
	KDGPU_FAULT=absent KDGPU_CUDA_LIB=$(CURDIR)/$(B)/test-bin/fake_cuda.so $(B)/test-bin/fault-test absent || rc=1; \
	echo "== no GPU library"; \
	KDGPU_CUDA_LIB=$(CURDIR)/$(B)/test-bin/no-such-library.so $(B)/test-bin/fault-test absent || rc=1; \
	exit $$rc

.PHONY: fault-check

# ---- one tree split over several devices (test/split) ------------------------
# split_test checks a split copy's answers against brute force and a build
# over several devices against the CPU's; here on emulated devices, on a GPU
# host with KDGPU_CUDA_LIB=build/kdgpu_cuda.so build/test-bin/split-test
$(B)/test-bin/split-test: test/split/split_test.c test/engine/datagen.c test/engine/oracle.c $(ENGINE_SRCS) $(ENGINE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ENGINE_CFLAGS) -g -Wall -Isrc/engine -Itest/engine -o $@ \
		test/split/split_test.c test/engine/datagen.c test/engine/oracle.c $(ENGINE_SRCS) -ldl -lm

split-check: $(B)/test-bin/split-test $(B)/test-bin/emulated_cuda.so
	@rc=0; \
	for d in 2 3; do \
		echo "== $$d emulated devices"; \
		KDGPU_FAKE_DEVICES=$$d KDGPU_CUDA_LIB=$(CURDIR)/$(B)/test-bin/emulated_cuda.so $(B)/test-bin/split-test || rc=1; \
	done; \
	exit $$rc

.PHONY: split-check

# ---- load soak (test/soak/README.md) -----------------------------------------
SOAK_SECONDS ?= 75

soak-check:
	test/soak/soak $(SOAK_SECONDS)

.PHONY: soak-check

# ---- pgTAP suites and the whole test run -----------------------------------
ALL_PGTAP = $(sort $(wildcard test/pgtap/*.sql))
PGTAP_SUITES = $(if $(HAVE_POSTGIS),$(ALL_PGTAP),$(filter-out test/pgtap/postgis_%,$(ALL_PGTAP)))

prove-check:
	pg_prove $(PG_PROVE_FLAGS) $(PGTAP_SUITES)

check-all:
	test/run-all

.PHONY: prove-check check-all
