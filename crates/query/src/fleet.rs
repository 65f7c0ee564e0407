//! Fleet runs read back: every stored test of a fleet run as pairs
//! (`fleet report`), and two runs compared pair by pair (`fleet compare`).

use crate::error::Error;
use stackmeter_results::fleet::PairTest;
use stackmeter_store::Store;

/// `fleet compare`: fleet runs `a` and `b` of `store`, pair by
/// pair, a change past `tolerance` percent flagged after the correction.
pub fn compare(
    store: &Store,
    a: &str,
    b: &str,
    tolerance: f64,
) -> Result<stackmeter_results::fleet::FleetComparison, Error> {
    if !(tolerance.is_finite() && tolerance >= 0.0) {
        return Err(Error::flag(format!(
            "--tolerance {tolerance}: expected a percentage of 0 or more"
        )));
    }
    let (ta, tb) = (stored_tests(store, a)?, stored_tests(store, b)?);
    let c = stackmeter_results::fleet::FleetComparison::build(a, &ta, b, &tb, tolerance);
    if c.compared == 0 {
        return Err(Error::NothingToCompare(format!(
            "fleet runs {a} and {b} have no pair and figure in common"
        )));
    }
    Ok(c)
}

/// Every stored test of fleet run `run` (the runs of kind `fleet` that
/// every client of the run stored under that name), as pairs. An error
/// when there are none.
pub fn stored_tests(store: &Store, run: &str) -> Result<Vec<PairTest>, Error> {
    let runs: Vec<_> = store
        .runs()?
        .into_iter()
        .filter(|r| r.run.kind == "fleet" && r.run.plan.as_deref() == Some(run))
        .collect();
    if runs.is_empty() {
        let names: Vec<String> = store
            .runs()?
            .into_iter()
            .filter(|r| r.run.kind == "fleet")
            .filter_map(|r| r.run.plan)
            .fold(Vec::new(), |mut v, n| {
                if !v.contains(&n) {
                    v.push(n);
                }
                v
            });
        let known = match names.is_empty() {
            true => "the store holds no fleet run".to_string(),
            false => format!("fleet runs stored: {}", names.join(", ")),
        };
        return Err(Error::not_stored(format!("no fleet run named '{run}' ({known})")));
    }
    let mut out = Vec::new();
    for r in runs {
        for t in store.tests_of_run(r.id)? {
            let Some((client, target)) = PairTest::pair(&t.label) else {
                continue;
            };
            out.push(PairTest {
                client: client.to_string(),
                target: target.to_string(),
                step: t.step,
                repetition: t.repetition,
                doc: t.doc,
            });
        }
    }
    Ok(out)
}
