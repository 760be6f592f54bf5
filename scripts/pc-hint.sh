#!/bin/sh
# After `make install`: when pkg-config would not look in the folder that
# now holds nectar.pc (a prefix such as $HOME/.local), say how to make it.
# Arguments: DESTDIR (staged installs say nothing), the pkgconfig folder.
[ -n "$1" ] && exit 0
dir=$2
command -v pkg-config >/dev/null 2>&1 || exit 0
search=$(pkg-config --variable pc_path pkg-config 2>/dev/null):${PKG_CONFIG_PATH:-}
case ":$search:" in
*":$dir:"*) exit 0 ;;
esac
echo "nectar.pc is in $dir, where pkg-config does not look; add it with:"
echo "  export PKG_CONFIG_PATH=$dir\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}"
