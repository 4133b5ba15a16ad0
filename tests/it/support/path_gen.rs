//! Deterministic generator of lookup keys for a file_contexts: real-looking
//! paths built from the specs' literal prefixes plus random components, and
//! hostile ones (non-UTF-8 bytes, `//`, trailing `/`, `.`/`..`, newlines,
//! 4 KiB names, relative paths, control bytes).

/// splitmix64: tiny, seedable, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound.max(1) as u64) as usize
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// A random element (by reference).
    pub fn choose<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// A random element of a slice of small copyable things (`&str`, bytes).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Literal material taken from a file_contexts text.
pub struct Vocabulary {
    /// Each spec's literal prefix (escapes resolved), e.g. `/usr/lib/libfoo`.
    prefixes: Vec<Vec<u8>>,
    /// Literal path components seen in specs.
    components: Vec<Vec<u8>>,
}

const META: &[u8] = b".^$?*+|[({";

impl Vocabulary {
    /// From file_contexts texts and substitution files (aliases are prefixes too).
    pub fn new(fc_texts: &[&str], subs_texts: &[&str]) -> Self {
        let mut prefixes = Vec::new();
        let mut components = Vec::new();
        for text in fc_texts {
            for line in text.lines() {
                let Some(spec) = line.split_whitespace().next() else {
                    continue;
                };
                if spec.starts_with('#') {
                    continue;
                }
                let prefix = literal_prefix(spec.as_bytes());
                for component in prefix.split(|&b| b == b'/') {
                    if !component.is_empty() {
                        components.push(component.to_vec());
                    }
                }
                prefixes.push(prefix);
            }
        }
        for text in subs_texts {
            for line in text.lines() {
                let mut fields = line.split_whitespace();
                if let (Some(alias), Some(_)) = (fields.next(), fields.next()) {
                    if !alias.starts_with('#') {
                        prefixes.push(alias.as_bytes().to_vec());
                    }
                }
            }
        }
        for extra in [
            "containerd",
            "kubelet",
            "pods",
            "etcd",
            "log",
            "lib",
            "run",
            "tmp",
            "cache",
            "data",
            "snapshots",
            "overlayfs",
            "io.containerd.snapshotter.v1.overlayfs",
            "volumes",
            "kubernetes.io~empty-dir",
            "secrets",
            "config.json",
            "rootfs",
            "fs",
            "work",
        ] {
            components.push(extra.as_bytes().to_vec());
        }
        prefixes.sort();
        prefixes.dedup();
        components.sort();
        components.dedup();
        Self {
            prefixes,
            components,
        }
    }

    pub fn real_looking(&self, rng: &mut Rng) -> Vec<u8> {
        let mut path = rng.choose(&self.prefixes).clone();
        if path.is_empty() {
            path.push(b'/');
        }
        // Half the time, complete a partial component (`/usr/lib/libfoo` → `.so.1`).
        if rng.chance(30) && path.last() != Some(&b'/') {
            const ENDINGS: [&[u8]; 10] = [
                b".so", b".so.1", b".conf", b"-1.2", b".d", b"d", b"s", b".log", b"~", b".pid",
            ];
            let ending = rng.pick(&ENDINGS);
            path.extend_from_slice(ending);
        }
        for _ in 0..rng.below(4) {
            if path.last() != Some(&b'/') {
                path.push(b'/');
            }
            if rng.chance(60) {
                let component = rng.choose(&self.components).clone();
                path.extend_from_slice(&component);
            } else {
                random_name(rng, &mut path);
            }
        }
        if path.len() > 1 && path.last() == Some(&b'/') && rng.chance(70) {
            path.pop();
        }
        path
    }

    pub fn hostile(&self, rng: &mut Rng) -> Vec<u8> {
        let mut path = self.real_looking(rng);
        for _ in 0..1 + rng.below(3) {
            mutate(rng, &mut path);
        }
        path
    }

    /// `count` keys: mostly real-looking, about a third hostile.
    pub fn keys(&self, rng: &mut Rng, count: usize) -> Vec<Vec<u8>> {
        (0..count)
            .map(|_| {
                if rng.chance(35) {
                    self.hostile(rng)
                } else {
                    self.real_looking(rng)
                }
            })
            .collect()
    }
}

fn random_name(rng: &mut Rng, out: &mut Vec<u8>) {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789._-";
    for _ in 0..1 + rng.below(12) {
        out.push(rng.pick(ALPHABET));
    }
}

/// One hostile edit somewhere in `path`.
fn mutate(rng: &mut Rng, path: &mut Vec<u8>) {
    let at = rng.below(path.len() + 1);
    match rng.below(13) {
        0 => path.splice(at..at, b"//".iter().copied()).for_each(drop),
        1 => path.push(b'/'),
        2 => path.splice(at..at, b"/./".iter().copied()).for_each(drop),
        3 => path.splice(at..at, b"/../".iter().copied()).for_each(drop),
        4 => {
            let bytes: Vec<u8> = (0..1 + rng.below(4))
                .map(|_| 0x80 + rng.below(128) as u8)
                .collect();
            path.splice(at..at, bytes).for_each(drop);
        }
        5 => path.push(b'\n'),
        6 => path.insert(at, b'\n'),
        7 => {
            // A 4 KiB name (rare: it is the costliest key for libselinux).
            if rng.chance(20) {
                path.push(b'/');
                path.extend(std::iter::repeat_n(b'a' + rng.below(26) as u8, 4096));
            } else {
                path.extend_from_slice(b"/x");
            }
        }
        8 => {
            while path.first() == Some(&b'/') {
                path.remove(0);
            }
        }
        9 => path.insert(at, 1 + rng.below(31) as u8),
        10 => path.insert(at, b' '),
        11 => path.extend_from_slice(b"/\n/x"),
        _ => {
            const TAILS: [&[u8]; 7] = [b"/.", b"/..", b"/", b"//", b"\n\n", b"\\", b"$"];
            let tail = rng.pick(&TAILS);
            path.extend_from_slice(tail);
        }
    }
    // Keys are C strings.
    path.retain(|&byte| byte != 0);
}

/// The literal text before a spec's first meta character, `\x` escapes of
/// non-alphanumerics resolved, stopping at any other escape.
pub fn literal_prefix(spec: &[u8]) -> Vec<u8> {
    let mut prefix = Vec::new();
    let mut index = 0;
    while index < spec.len() {
        let byte = spec[index];
        if byte == b'\\' {
            match spec.get(index + 1) {
                Some(&next) if !next.is_ascii_alphanumeric() => {
                    prefix.push(next);
                    index += 2;
                    continue;
                }
                _ => break,
            }
        }
        if META.contains(&byte) {
            break;
        }
        prefix.push(byte);
        index += 1;
    }
    prefix
}
