# Sourced by the build scripts: ccache_args LANG... fills the array `ccache_args` with
# -DCMAKE_<LANG>_COMPILER_LAUNCHER for each language when ccache is installed (never required;
# CI runs where the cache is warm), else leaves it empty. Paths inside the clone are hashed
# relative to it and the build folder is not hashed (Debug info names it), so a fresh clone
# anywhere reuses what another clone compiled. The settings go into the launcher itself, so
# every later `cmake --build` of that tree uses them.
ccache_args=()
ccache_args() {
  ccache_args=()
  if command -v ccache >/dev/null 2>&1; then
    local lang
    for lang in "$@"; do
      ccache_args+=("-DCMAKE_${lang}_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=true;ccache")
    done
  fi
}
