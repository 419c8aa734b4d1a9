# Rewrites a pipe-mode perf.data's COMPRESSED2 records (type 83: header, u64 data_size,
# data, pad to 8) as COMPRESSED records (type 81: header, data) holding the same zstd bytes.
import struct, sys
src = open(sys.argv[1], 'rb').read()
magic, size = struct.unpack_from('<8sQ', src, 0)
assert magic == b'PERFILE2' and size == 16, (magic, size)
out = bytearray(src[:16]); at = 16; n = 0
while at < len(src):
    t, misc, sz = struct.unpack_from('<IHH', src, at)
    rec = src[at:at + sz]
    if t == 83:
        (data_size,) = struct.unpack_from('<Q', rec, 8)
        data = rec[16:16 + data_size]
        out += struct.pack('<IHH', 81, misc, 8 + len(data)) + data
        n += 1
    else:
        out += rec
    at += sz
open(sys.argv[2], 'wb').write(out)
print(f'{n} COMPRESSED2 records rewritten', file=sys.stderr)
