//! A seeded random generator and a text mutation step for the workspace's deterministic
//! mutation tests (not part of the crate's API).

/// xorshift64: the same seed gives the same sequence on every run and platform.
pub struct Rng(pub u64);

impl Rng {
    /// The next number of the sequence (not an `Iterator`: it never ends).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (which must not be 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    /// One of `xs` (which must not be empty).
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// `text` with one to four edits at random places: a character replaced by one of `specials`,
/// a character deleted, one of `specials` inserted, a span of up to 8 characters duplicated, or
/// the tail cut.
pub fn mutate(text: &str, specials: &[char], rng: &mut Rng) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.next() % 4 {
        let at = rng.below(chars.len() + 1);
        match rng.next() % 5 {
            0 if at < chars.len() => chars[at] = specials[rng.below(specials.len())],
            1 if at < chars.len() => {
                chars.remove(at);
            }
            2 => chars.insert(at, specials[rng.below(specials.len())]),
            3 => {
                let end = (at + 1 + rng.below(8)).min(chars.len());
                let span: Vec<char> = chars[at..end].to_vec();
                chars.splice(at..at, span);
            }
            _ => chars.truncate(at),
        }
    }
    chars.into_iter().collect()
}

/// The mutation tests' loop: `check` on 20,000 mutations of `seeds` (taken in turn, each mutated
/// with `specials`, the generator seeded with `seed`). `check` says whether the text compiled;
/// the count of those is returned with the count of rounds.
pub fn mutation_rounds(
    seeds: &[&str],
    specials: &str,
    seed: u64,
    mut check: impl FnMut(&str) -> bool,
) -> (usize, usize) {
    let mut rng = Rng(seed);
    let specials: Vec<char> = specials.chars().collect();
    let (mut compiled, mut rounds) = (0, 0);
    for s in seeds.iter().cycle().take(20_000) {
        rounds += 1;
        let text = mutate(s, &specials, &mut rng);
        compiled += usize::from(check(&text));
    }
    (compiled, rounds)
}
