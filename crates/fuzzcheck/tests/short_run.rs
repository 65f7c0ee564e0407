//! The stable short run of every fuzz target (docs/reliability.md): each file
//! of `fuzz/corpus/<target>/` (starting inputs and every crash found so far,
//! kept as regressions), then seeded mutations of them, through the same
//! bodies the cargo-fuzz campaigns run. No nightly, no libFuzzer: a failing
//! input is written to `target/tmp/fuzzcheck-failures/` and named in the
//! panic.

use stackmeter_fuzzcheck::{mutate, Rng, TARGETS};
use std::path::{Path, PathBuf};

/// Mutated inputs per target; `FUZZCHECK_MUTATIONS` overrides.
const MUTATIONS: usize = 10_000;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Runs `body` on `input`; on a panic keeps the input and names it.
fn run(target: &str, body: fn(&[u8]), input: &[u8], what: &str) {
    if std::panic::catch_unwind(|| body(input)).is_err() {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("fuzzcheck-failures")
            .join(target);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("crash-{}", what.replace(['/', ' '], "_")));
        std::fs::write(&file, input).unwrap();
        panic!(
            "fuzz target {target} failed on {what}: input kept in {} (rerun: cargo +nightly fuzz run {target} {})",
            file.display(),
            file.display()
        );
    }
}

#[test]
fn every_target_has_a_corpus_and_a_campaign_harness() {
    for (name, _) in TARGETS {
        assert!(corpus(name).len() >= 3, "fuzz/corpus/{name} holds fewer than 3 inputs");
        let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../fuzz/fuzz_targets/{name}.rs"));
        let text = std::fs::read_to_string(&harness).unwrap_or_else(|e| panic!("{}: {e}", harness.display()));
        assert!(
            text.contains(&format!("stackmeter_fuzzcheck::{name}(")),
            "{} calls another body",
            harness.display()
        );
    }
}

#[test]
fn every_corpus_file_and_its_mutations_pass_every_target() {
    let n: usize = std::env::var("FUZZCHECK_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MUTATIONS);
    for (seed, (name, body)) in TARGETS.into_iter().enumerate() {
        let files = corpus(name);
        for (file, bytes) in &files {
            run(name, body, bytes, file);
        }
        let inputs: Vec<Vec<u8>> = files.into_iter().map(|(_, b)| b).collect();
        let mut rng = Rng::new(0x5eed_0000 + seed as u64);
        for i in 0..n {
            let mut input = inputs[rng.below(inputs.len())].clone();
            mutate(&mut rng, &mut input, &inputs);
            run(name, body, &input, &format!("mutation {i}"));
        }
    }
}
