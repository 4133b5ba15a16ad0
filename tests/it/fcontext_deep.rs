//! Per-directory lookups on deep keys: a directory below the
//! longest prefix group and literal directory keeps no key bytes, and one
//! below 4 KiB no longer runs crowded groups on its full key. Both must
//! still answer exactly like plain lookups and libselinux, with literal
//! specs, prefix groups, crowded directories (more than 64 live specs),
//! stem filters and substitutions on the way down.

use crate::support::fc_oracle;

use std::fmt::Write as _;

/// A chain of `depth` directories named `name` below `start`, every level
/// as a key, plus entries at some levels.
fn chain(start: &str, name: &str, depth: usize) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    let mut key = start.to_owned();
    for level in 0..depth {
        key.push('/');
        key.push_str(name);
        keys.push(key.clone().into_bytes());
        if level < 3 || level % 7 == 0 {
            for entry in ["x3", "x42", "f.log", "lit", "y"] {
                keys.push(format!("{key}/{entry}").into_bytes());
            }
        }
    }
    keys
}

#[test]
fn deep_chains_answer_like_plain_lookups_and_libselinux() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fc = dir.path().join("file_contexts");
    let long = "n".repeat(255);
    let mut specs = String::new();
    specs.push_str("/deep(/.*)?\tu:r:deep_t:s0\n");
    specs.push_str("/deep/.*\\.log\t--\tu:r:log_t:s0\n");
    specs.push_str("/deep/[^/]+/[^/]+/y\tu:r:third_y_t:s0\n");
    specs.push_str("/alias(/.*)?\tu:r:alias_t:s0\n");
    // A literal deep enough to keep keys for a while, and prefix groups.
    let literal_dir = format!("/deep/{long}/{long}");
    writeln!(specs, "{literal_dir}/lit\tu:r:lit_t:s0").expect("write");
    writeln!(specs, "{literal_dir}/[a-z]+\t-d\tu:r:prefixed_t:s0").expect("write");
    // More than 64 specs alive at every depth: a crowded directory.
    for i in 0..70 {
        writeln!(specs, "/deep/(.*/)?x{i}\tu:r:crowd{i}_t:s0").expect("write");
    }
    // A stem-less spec that matches anywhere.
    specs.push_str(".*/y\tu:r:any_y_t:s0\n");
    std::fs::write(&fc, &specs).expect("file_contexts");
    std::fs::write(format!("{}.subs", fc.display()), "/alias /deep\n").expect(".subs");

    let mut keys = chain("/deep", &long, 24);
    keys.extend(chain("/alias", &long, 20));
    keys.extend(chain("/deep", "s", 300));
    // The deepest keys are longer than both limits (about 6 KiB).
    assert!(keys.iter().any(|key| key.len() > 6000));
    fc_oracle::assert_agrees_with_libselinux(&fc, &keys);
}
