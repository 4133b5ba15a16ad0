//! Names for what `suggest` adds to a layout: domain keys and types from
//! workload names, path types from paths. Each is a valid key or SELinux
//! identifier and unique among the layout's, the base policy's and the
//! names handed out before.

use std::collections::BTreeSet;

use layout::model::Layout;

pub(super) struct Names {
    keys: BTreeSet<String>,
    types: BTreeSet<String>,
}

impl Names {
    pub(super) fn new(layout: &Layout, base_types: &BTreeSet<String>) -> Names {
        let keys = layout.domains.iter().map(|d| d.key.clone()).collect();
        let types = layout
            .domains
            .iter()
            .map(|d| d.type_name.clone())
            .chain(layout.paths.iter().map(|p| p.type_name.clone()))
            .chain(base_types.iter().cloned())
            .collect();
        Names { keys, types }
    }

    /// A domain key and type for a workload named `name`: `fluent-bit`
    /// and `fluent_bit_t`; `fluent-bit-2` and `fluent_bit_2_t` when either
    /// is taken.
    pub(super) fn domain(&mut self, name: &str) -> (String, String) {
        let base = identifier(name, '-');
        for n in 1.. {
            let key = if n == 1 {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            let type_name = format!("{}_t", key.replace('-', "_"));
            if !self.keys.contains(&key) && !self.types.contains(&type_name) {
                self.keys.insert(key.clone());
                self.types.insert(type_name.clone());
                return (key, type_name);
            }
        }
        unreachable!("an unbounded range always yields a free name")
    }

    /// A type for a new layout path: `/var/lib/docker/containers` is
    /// `var_lib_docker_containers_t` (`…_2_t` when taken).
    pub(super) fn path_type(&mut self, path: &str) -> String {
        let base = identifier(path, '_');
        for n in 1.. {
            let type_name = if n == 1 {
                format!("{base}_t")
            } else {
                format!("{base}_{n}_t")
            };
            if self.types.insert(type_name.clone()) {
                return type_name;
            }
        }
        unreachable!("an unbounded range always yields a free name")
    }
}

/// `raw` lower-cased, every run of characters other than ASCII letters
/// and digits made one `separator`, trimmed; a leading digit gets a `w`
/// in front so the result starts with a letter; nothing at all is
/// `workload`.
fn identifier(raw: &str, separator: char) -> String {
    let mut out = String::new();
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with(separator) {
            out.push(separator);
        }
    }
    while out.ends_with(separator) {
        out.pop();
    }
    if out.is_empty() {
        return "workload".to_owned();
    }
    if !out.starts_with(|c: char| c.is_ascii_lowercase()) {
        out.insert(0, separator);
        out.insert(0, 'w');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_start_with_a_letter_and_keep_nothing_else() {
        assert_eq!(identifier("fluent-bit", '-'), "fluent-bit");
        assert_eq!(identifier("My.Agent--v2", '-'), "my-agent-v2");
        assert_eq!(
            identifier("/var/lib/docker/containers", '_'),
            "var_lib_docker_containers"
        );
        assert_eq!(identifier("9p-driver", '-'), "w-9p-driver");
        assert_eq!(identifier("", '_'), "workload");
    }
}
