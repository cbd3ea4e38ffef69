# Sourced by scripts/test.sh and scripts/test-long.sh: clippy lints the
# workspace's crates while the test build compiles them, the way `cargo
# clippy` runs it (clippy-driver as the workspace's rustc wrapper, its
# arguments in CLIPPY_ARGS). The dependencies are then compiled once, not
# checked for clippy and compiled again for the tests. Any lint fails the
# build (-D warnings). Where clippy-driver is not on the PATH, LINT_IN_BUILD
# stays 0 and test.sh runs `cargo clippy` as a step of its own.
LINT_IN_BUILD=0
if driver=$(command -v clippy-driver) && "$driver" --version >/dev/null 2>&1; then
  export RUSTC_WORKSPACE_WRAPPER="$driver"
  export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
  LINT_IN_BUILD=1
fi
