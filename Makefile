# ConcurrencyKit: `make demo` shows the toolkit working, `make test` is the full gate CI runs.
SWIFT        ?= swift
# The gate runs the debug build's lock-order checker in trap mode: a possible deadlock, or a blocking call made from
# inside a Swift concurrency task, stops the test run (see LockOrderChecking).
TRAP         := CONCURRENCYKIT_LOCK_ORDER=trap
STRICT       := -Xswiftc -warnings-as-errors
TSAN_SCRATCH := .build-tsan
ASAN_SCRATCH := .build-asan
RELEASE_SCRATCH := .build-release
FORMATTED    := Package.swift Sources Tests Benchmarks/Package.swift Benchmarks/Benchmarks Examples
EXAMPLES     := Examples/GranularConsumer Examples/UmbrellaConsumer
# Every stage of the gate runs under scripts/stage.sh: in a process group of its own, for at most its time limit
# (seconds), after which it prints the tests and processes still running and ends all of them, as it does when it
# is itself ended (an outer `timeout`, Ctrl-C). The limits are 3-5 times a stage's time on CI's two quiet cores (a
# whole `make test` takes about 6 minutes there), so that only a hang reaches them; STAGE_LIMIT_FACTOR=<n>
# multiplies all of them on a slower machine.
STAGE        := scripts/stage.sh
LIMIT_BUILD  ?= 1800
LIMIT_UNIT   ?= 600
LIMIT_CHAOS  ?= 1200
LIMIT_SAN    ?= 1200
LIMIT_OTHER  ?= 1200

.PHONY: all build test gate markdown-lint unit chaos release soak tsan asan examples install-check noasync-check snippets demo bench bench-check bench-scale bench-scale-static checker-cost docs docs-serve lint format clean

all: build

## build: the library, demo and tests, with warnings as errors.
build:
	$(STAGE) build $(LIMIT_BUILD) $(SWIFT) build $(STRICT) --build-tests

## test: the gate: format lint, strict build, the suite (lock-order checker trapping), the contract properties under
## three chaos seeds and in a release build, the suite under ThreadSanitizer and under AddressSanitizer with leak
## detection, the consumer packages, the README's install, top-level awaits that never block, the doc examples, the
## docs.
# Every stage adds its line to the summary (scripts/stage.sh), which is printed at the end with the verdict, also
# when a stage fails.
SUMMARY      := .build/gate-summary.txt
test:
	@mkdir -p .build && rm -f $(SUMMARY)
	@STAGE_SUMMARY=$(CURDIR)/$(SUMMARY) $(MAKE) --no-print-directory gate; status=$$?; \
		echo; echo "make test: the stages, in order:"; cat $(SUMMARY) 2>/dev/null; \
		if [ $$status -eq 0 ]; then echo "make test: PASSED: every stage passed"; \
		else echo "make test: FAILED: the last stage above did not pass (its output is further up)"; fi; \
		exit $$status

## gate: the stages of `make test`, without the summary.
gate: lint markdown-lint build unit chaos release tsan asan examples install-check noasync-check snippets docs

## markdown-lint: every Markdown file read by a CommonMark parser: no unclosed fence, no relative link or anchor that
## leads nowhere.
markdown-lint:
	$(STAGE) markdown-lint $(LIMIT_OTHER) python3 scripts/markdown-lint.py

# The build has a limit of its own, so that the suite's limit measures the tests only.
unit:
	$(STAGE) unit-build $(LIMIT_BUILD) $(SWIFT) build $(STRICT) --build-tests
	$(TRAP) $(STAGE) unit $(LIMIT_UNIT) scripts/run-suite.sh $(SWIFT) test $(STRICT) --skip-build

## chaos: the contract property tests under schedule chaos, seeds 1 to 3, checker trapping.
chaos:
	$(STAGE) chaos-build $(LIMIT_BUILD) $(SWIFT) build $(STRICT) --build-tests
	$(STAGE) chaos $(LIMIT_CHAOS) scripts/chaos.sh 1 3

## release: in an optimized build, as users ship the package, where the optimizer may reuse or reorder what a debug
## build keeps in place: the contract properties (scripts/property-suites.txt), the wait report's suites, the thread
## identity, and the suites whose exit tests check that misuse traps with its message. Tests of what only debug builds
## have (the lock-order checker, the blocking-call check, schedule chaos, a value's wait observer) are skipped there
## (`debugBuildsOnly`).
PROPERTY_SUITES := $(shell cat scripts/property-suites.txt)
ifeq ($(strip $(PROPERTY_SUITES)),)
$(error scripts/property-suites.txt is missing or empty: run make from the repository's root)
endif
RELEASE_SUITES := $(PROPERTY_SUITES)|WaitReport|WaitWatchdogTests|TestClockWaitTests|ThreadIdentityTests
RELEASE_SUITES := $(RELEASE_SUITES)|ReentryTrapTests|GCDQueueIterateTests|GCDQueueSuspendAndBarrierTests
RELEASE_SUITES := $(RELEASE_SUITES)|GCDQueueMainActorTests|GCDTimerSchedulingTests|AsyncOperationTests
RELEASE_SUITES := $(RELEASE_SUITES)|QueuerRetryingTests|OperationRetryTests|SchedulerRepeatRuleTests
RELEASE_SUITES := $(RELEASE_SUITES)|MainQueueDoctorRoutesTests
RELEASE_SUITES := $(RELEASE_SUITES)|MutexLockTests|AtomicBoxTests|CountingSemaphoreTests|QueuerTests|TestClockTests
RELEASE_SUITES := $(RELEASE_SUITES)|MainActorCallbackTests|CallbackSubjectValuesTests|ManualCompletionDoctorTests
RELEASE_SUITES := $(RELEASE_SUITES)|GCDTaskAndGroupTests|OnceDispatcherTests|GCDQueueTests|GCDTimerTests|ClockTicksTests
RELEASE_SUITES := $(RELEASE_SUITES)|RetryPolicyTests|ConcurrentOperationTests|GroupOperationTests|SchedulerTests
RELEASE_SUITES := $(RELEASE_SUITES)|RetryBudgetTests|MainQueueDoctorTests|ExclusionPropertyTests
release:
	$(STAGE) release-build $(LIMIT_BUILD) $(SWIFT) build -c release $(STRICT) -Xswiftc -enable-testing --build-tests --scratch-path $(RELEASE_SCRATCH)
	$(STAGE) release $(LIMIT_UNIT) scripts/run-suite.sh $(SWIFT) test -c release $(STRICT) -Xswiftc -enable-testing --skip-build --scratch-path $(RELEASE_SCRATCH) --filter "$(RELEASE_SUITES)"

## soak: the contract property tests under 100 chaos seeds with 4 times the rounds, for at most 40 minutes; not part
## of `make test`. SOAK_SEEDS, SOAK_ROUNDS and SOAK_MINUTES change that.
SOAK_SEEDS   ?= 100
SOAK_ROUNDS  ?= 4
SOAK_MINUTES ?= 40
soak:
	$(STAGE) soak $$(( ($(SOAK_MINUTES) + 20) * 60 )) scripts/chaos.sh 1 $(SOAK_SEEDS) $(SOAK_ROUNDS) $(SOAK_MINUTES)

# Under a sanitizer every test runs several times slower: run the suites one after another, so that a suite's time
# limit does not count the time it waits for a core.
tsan:
	$(STAGE) tsan-build $(LIMIT_BUILD) $(SWIFT) build $(STRICT) --build-tests --sanitize=thread --scratch-path $(TSAN_SCRATCH)
	$(TRAP) TSAN_OPTIONS=suppressions=$(CURDIR)/scripts/tsan.supp $(STAGE) tsan $(LIMIT_SAN) scripts/run-suite.sh $(SWIFT) test $(STRICT) --skip-build --no-parallel --sanitize=thread --scratch-path $(TSAN_SCRATCH)

asan:
	$(STAGE) asan-build $(LIMIT_BUILD) $(SWIFT) build $(STRICT) --build-tests --sanitize=address --scratch-path $(ASAN_SCRATCH)
	$(TRAP) CONCURRENCYKIT_RECORD_SYNCS=0 ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp $(STAGE) asan $(LIMIT_SAN) scripts/run-suite.sh $(SWIFT) test $(STRICT) --skip-build --no-parallel --sanitize=address --scratch-path $(ASAN_SCRATCH)

## examples: build and test the packages under Examples/ that depend on ConcurrencyKit by path, with the checks
## trapping: a blocking call from a task or a lock-order warning in an example a newcomer copies fails the gate.
examples:
	@for example in $(EXAMPLES); do \
		echo "examples: $$example"; \
		$(STAGE) "examples $$example" $(LIMIT_OTHER) \
			sh -c 'cd "$$1" && $(SWIFT) build $(STRICT) --build-tests && $(TRAP) $(SWIFT) test $(STRICT)' sh $$example || exit 1; \
	done

## install-check: a fresh package that follows the README's install section resolves, builds and runs its first example.
install-check:
	$(STAGE) install-check $(LIMIT_OTHER) scripts/install-check.sh

## noasync-check: in a fresh main.swift, a top-level await on each async form suspends, and one on each blocking
## twin is a compile error that names the async form, never a silent block.
noasync-check:
	$(STAGE) noasync-check $(LIMIT_OTHER) python3 scripts/noasync-check.py

## snippets: compile and run every Swift example of the docs (README, Docs/, DocC articles, `///` comments) and
## check the output each one states.
snippets:
	$(STAGE) snippets $(LIMIT_OTHER) python3 scripts/doc-examples.py

## demo: a tour of the toolkit at work.
demo:
	$(SWIFT) run ConcurrencyKitDemo

## bench: the benchmarks, printed as ratios to their same-run baselines (median of several runs).
bench:
	python3 Benchmarks/ratios.py

## bench-check: as bench, then the scaling rows a 2-core machine can show (every goal of issue 26 at 1 and 2 threads,
## wait.set and the semaphore at 4x the cores); exits non-zero when a goal of either is missed.
bench-check:
	@status=0; python3 Benchmarks/ratios.py --check || status=1; \
		python3 Benchmarks/scale.py --check $(BENCH_SCALE_ARGS) || status=1; exit $$status

## bench-scale: issue 26's scaling rows: each contended path at 1, 2, 4 ... threads up to the core count, then 2x and
## 4x the cores, next to its anchors in one process; prints a table per row and each goal beside its ratios (not a
## gate), writes .build/scaling/scaling.json and scaling.svg. BENCH_SCALE_ARGS passes arguments on to the benchmark
## (--quick, --rows wait-set,lock, --threads 1,2,8, --rounds N, --target-ms N, --cores N).
BENCH_SCALE_ARGS ?=
bench-scale:
	python3 Benchmarks/scale.py $(BENCH_SCALE_ARGS)

## bench-scale-static: the same benchmark with the Swift runtime linked in (--static-swift-stdlib), stripped, in
## .build-device/ beside a copy of scale.py, for a many-core Linux machine that has no Swift: copy the folder there
## and run `python3 .build-device/scale.py --binary .build-device/ScalingBenchmarks` (or run the binary alone, save
## its JSON, and render it here with `python3 Benchmarks/scale.py --from-json FILE`).
DEVICE_DIR := .build-device
bench-scale-static:
	cd Benchmarks && $(SWIFT) build -c release --static-swift-stdlib --product ScalingBenchmarks --scratch-path .build-static
	mkdir -p $(DEVICE_DIR)
	cp Benchmarks/.build-static/release/ScalingBenchmarks Benchmarks/scale.py $(DEVICE_DIR)/
	strip $(DEVICE_DIR)/ScalingBenchmarks
	@ls -l $(DEVICE_DIR)/ScalingBenchmarks
	$(DEVICE_DIR)/ScalingBenchmarks --list

## checker-cost: the lock-order checker's cost per lock/unlock pair in a debug build (goal: at most 50 ns added).
checker-cost:
	cd Benchmarks && $(SWIFT) run -c debug DebugCheckerCost --check

## docs: every DocC catalog, offline, warnings as errors, merged into one site in .build/docs/ConcurrencyKit.doccarchive.
docs:
	$(STAGE) docs $(LIMIT_OTHER) scripts/docs.sh

## docs-serve: builds the docs and serves the site at http://localhost:8000/documentation/ (Ctrl-C stops it).
docs-serve: docs
	@echo "docs: open http://localhost:8000/documentation/"
	python3 -m http.server 8000 --bind 127.0.0.1 --directory .build/docs/ConcurrencyKit.doccarchive

lint:
	$(STAGE) lint $(LIMIT_OTHER) $(SWIFT) format lint --strict --recursive $(FORMATTED)

format:
	$(SWIFT) format format --in-place --recursive $(FORMATTED)

clean:
	rm -rf .build $(TSAN_SCRATCH) $(ASAN_SCRATCH) .build-device Benchmarks/.build Benchmarks/.build-static $(addsuffix /.build,$(EXAMPLES))
