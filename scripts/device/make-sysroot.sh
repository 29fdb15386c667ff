#!/usr/bin/env bash
# Makes .cuda-carry/sysroot/ (ignored by git, 2.7 MB) for building on the device machine, which lacks the
# headers of the text and HTTP libraries (pcre2, utf8proc, cpp-httplib; DEVICE.md): their headers, .so files
# and pkg-config files from this machine. Then, on the device, carry it and build there on 16 cores:
#   run(carry=[".cuda-carry/sysroot"]): scripts/device/run-gpu-suite.sh --sysroot .cuda-carry/sysroot --skip-bench
# A cold build there takes longer than one call's 600 s: issue the same call again at once (the machine keeps
# build-gpu/ while warm, 30 s after a call), and it finishes the build and runs the suite (~140 s).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
EXCLUDE=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$EXCLUDE")"
grep -qx '/.cuda-carry/' "$EXCLUDE" 2>/dev/null || echo '/.cuda-carry/' >>"$EXCLUDE"
S=.cuda-carry/sysroot
rm -rf $S && mkdir -p $S/include $S/lib/pkgconfig
cp /usr/include/pcre2.h /usr/include/httplib.h /usr/include/utf8proc.h /usr/include/zlib.h /usr/include/zconf.h $S/include/
cp -r /usr/include/brotli $S/include/
for l in libpcre2-8.so.0 libutf8proc.so.2 libcpp-httplib.so.0.11 libbrotlidec.so.1 libbrotlienc.so.1 libbrotlicommon.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$l" $S/lib/
done
(cd $S/lib && ln -sf libpcre2-8.so.0 libpcre2-8.so && ln -sf libutf8proc.so.2 libutf8proc.so &&
   ln -sf libcpp-httplib.so.0.11 libcpp-httplib.so)
# The .pc files, relocated to the sysroot; Requires.private dropped (the device has no zlib/brotli .pc files,
# and a non-static link does not need them).
for pc in libpcre2-8 libutf8proc cpp-httplib; do
  sed -e 's|^prefix=.*|prefix=${pcfiledir}/../..|' -e 's|^libdir=.*|libdir=${prefix}/lib|' \
      -e 's|^includedir=.*|includedir=${prefix}/include|' -e '/^Requires.private/d' \
      "/usr/lib/x86_64-linux-gnu/pkgconfig/$pc.pc" >"$S/lib/pkgconfig/$pc.pc"
done
du -sh $S
