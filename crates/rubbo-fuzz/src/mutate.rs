//! The mutations: byte-level edits of a seed, biased towards what breaks decoders
//! (lengths at their limits, tags, truncation).

/// A small, seedable random source (xorshift64*): reproducible runs without a
/// dependency.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A source starting from `seed` (0 is replaced by a fixed odd constant).
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

/// Lengths and counts at the edges: 0, 1, sign and size boundaries, 1 and 2 GiB.
const INTERESTING_32: &[u32] = &[
    0,
    1,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x7fff,
    0x8000,
    0xffff,
    0x1_0000,
    0x40_0000,
    0x80_0001,
    0x4000_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_fffe,
    0xffff_ffff,
];

const INTERESTING_8: &[u8] = &[0x00, 0x01, 0x0f, 0x1f, 0x20, 0x7f, 0x80, 0xc0, 0xfe, 0xff];

/// Replaces `out` with a mutation of a seed (or, now and then, of random bytes).
pub(crate) fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], dict: &[Vec<u8>], out: &mut Vec<u8>) {
    out.clear();
    if seeds.is_empty() || rng.below(32) == 0 {
        let n = rng.below(64);
        out.extend((0..n).map(|_| rng.next_u64() as u8));
    } else {
        out.extend_from_slice(&seeds[rng.below(seeds.len())]);
    }
    let edits = 1 + rng.below(6);
    for _ in 0..edits {
        edit(rng, seeds, dict, out);
    }
}

fn edit(rng: &mut Rng, seeds: &[Vec<u8>], dict: &[Vec<u8>], out: &mut Vec<u8>) {
    let len = out.len();
    match rng.below(11) {
        0 if len > 0 => {
            let i = rng.below(len);
            out[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            out[i] = INTERESTING_8[rng.below(INTERESTING_8.len())];
        }
        2 if len > 0 => {
            let i = rng.below(len);
            out[i] = rng.next_u64() as u8;
        }
        3 if len >= 4 => {
            // A big-endian length (Java writes them so), sometimes little-endian.
            let v = INTERESTING_32[rng.below(INTERESTING_32.len())];
            let bytes = if rng.below(4) == 0 {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            };
            let i = rng.below(len - 3);
            out[i..i + 4].copy_from_slice(&bytes);
        }
        4 if len >= 2 => {
            let v = INTERESTING_32[rng.below(INTERESTING_32.len())] as u16;
            let i = rng.below(len - 1);
            out[i..i + 2].copy_from_slice(&v.to_be_bytes());
        }
        5 if len > 0 => {
            // Truncate: half frames and cut documents.
            out.truncate(rng.below(len));
        }
        6 if len > 0 => {
            let from = rng.below(len);
            let n = 1 + rng.below((len - from).min(16));
            out.drain(from..from + n);
        }
        7 if len > 0 && len < 1 << 16 => {
            // Duplicate a run: repeated tags, nested structures, sticky frames.
            let from = rng.below(len);
            let n = 1 + rng.below((len - from).min(64));
            let run: Vec<u8> = out[from..from + n].to_vec();
            let at = rng.below(len + 1);
            out.splice(at..at, run);
        }
        8 if !dict.is_empty() => {
            let token = &dict[rng.below(dict.len())];
            let at = rng.below(len + 1);
            if rng.below(2) == 0 || at + token.len() > len {
                out.splice(at..at, token.iter().copied());
            } else {
                out[at..at + token.len()].copy_from_slice(token);
            }
        }
        9 if !seeds.is_empty() => {
            // Splice: the head of this input and the tail of another seed.
            let other = &seeds[rng.below(seeds.len())];
            let cut = rng.below(len + 1);
            let from = rng.below(other.len() + 1);
            out.truncate(cut);
            out.extend_from_slice(&other[from..]);
        }
        _ => {
            let at = rng.below(len + 1);
            let n = 1 + rng.below(8);
            let fresh: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            out.splice(at..at, fresh);
        }
    }
}
