# Reference ThreeFry-2x32 (20 rounds) and Philox-4x32 (10 rounds) as XLA computes them;
# running this file prints Random123 known-answer vectors to compare with the published ones.
M = 0xffffffff
def rotl(v, r): return ((v << r) | (v >> (32 - r))) & M
def threefry2x32(k0, k1, x0, x1):
    rot = [13, 15, 26, 6, 17, 29, 16, 24]
    ks = [k0, k1, 0x1BD11BDA ^ k0 ^ k1]
    x = [(x0 + ks[0]) & M, (x1 + ks[1]) & M]
    for blk in range(5):
        for r in rot[(blk % 2) * 4:(blk % 2) * 4 + 4]:
            x[0] = (x[0] + x[1]) & M
            x[1] = rotl(x[1], r) ^ x[0]
        s = blk + 1
        x[0] = (x[0] + ks[s % 3]) & M
        x[1] = (x[1] + ks[(s + 1) % 3] + s) & M
    return x
def philox4x32(k0, k1, c):
    c = list(c)
    for _ in range(10):
        p0 = c[0] * 0xD2511F53; p1 = c[2] * 0xCD9E8D57
        c = [((p1 >> 32) ^ c[1] ^ k0) & M, p1 & M, ((p0 >> 32) ^ c[3] ^ k1) & M, p0 & M]
        k0 = (k0 + 0x9E3779B9) & M; k1 = (k1 + 0xBB67AE85) & M
    return c
if __name__ == "__main__":
    print([hex(v) for v in threefry2x32(0, 0, 0, 0)])
    print([hex(v) for v in threefry2x32(M, M, M, M)])
    print([hex(v) for v in threefry2x32(0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3)])
    print([hex(v) for v in philox4x32(0, 0, [0, 0, 0, 0])])
    print([hex(v) for v in philox4x32(M, M, [M] * 4)])
    print([hex(v) for v in philox4x32(0xa4093822, 0x299f31d0, [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344])])
