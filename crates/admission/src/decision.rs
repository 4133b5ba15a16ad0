//! The judgement every renderer prints: what `check --k8s` decides about
//! a hostPath volume, as data taken from `k8s`'s own rules
//! ([`HostPathRules`]). A renderer never reads the layout; this module
//! turns each rule into the regular expressions ([`PathTest`]) that judge
//! a path as written, per domain.

use k8s::{DomainKind, DomainRules, HostPathRules, MountAccess, ProtectedPath};
use layout::diag::Location;
use layout::model::host::{HostPath, Scope, HOST_CLASSES};

use crate::pattern::{Cover, PathTest};

/// hostPath `type` values the API server accepts, as `check` judges them.
pub use k8s::VALID_HOST_PATH_TYPES as HOST_PATH_TYPES;

/// What admission decides, from one layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// The layout's `metadata.name`.
    pub layout: String,
    /// The layout file as given (or the embedded default's name).
    pub source: String,
    /// The rules `check --k8s` judges with.
    pub rules: HostPathRules,
}

/// `PATH (line N)`, for messages that name the layout file once.
pub fn at_line(what: &str, at: &Option<Location>) -> String {
    match at {
        Some(at) => format!("{what} (line {})", at.pos.line),
        None => what.to_owned(),
    }
}

impl Judgement {
    /// The judgement `check --k8s` makes with `parsed`'s layout.
    pub fn of(parsed: &layout::manifest::Parsed) -> Judgement {
        Judgement::from_rules(
            HostPathRules::of(parsed),
            &parsed.layout.name,
            &parsed.source.name,
        )
    }

    /// The judgement of `rules`, which `layout` (read from `source`) gave.
    pub fn from_rules(rules: HostPathRules, layout: &str, source: &str) -> Judgement {
        Judgement {
            layout: layout.to_owned(),
            source: source.to_owned(),
            rules,
        }
    }

    /// Objects whose privileged containers the layout accepts, as
    /// `namespace/name` (a name holds no `/`, so the pair is unambiguous).
    pub fn privileged_exceptions(&self) -> Vec<String> {
        self.rules
            .privileged_exceptions
            .iter()
            .map(|e| format!("{}/{}", e.namespace, e.name))
            .collect()
    }

    /// Every `seLinuxOptions.type` that selects a domain, in layout order.
    pub fn domain_types(&self) -> Vec<&str> {
        self.rules
            .domains
            .iter()
            .map(|d| d.selinux_type.as_str())
            .collect()
    }

    /// The domain of a container that names no type.
    pub fn pod_domain(&self) -> Option<&DomainRules> {
        let pod = self.rules.pod_type.as_deref()?;
        self.rules.domains.iter().find(|d| d.selinux_type == pod)
    }

    /// Paths no hostPath may be, lie in (outside their carve-outs) or
    /// contain.
    pub fn protected_test(&self) -> PathTest {
        PathTest::of(self.rules.protected.iter().map(protected_covers))
    }

    /// The paths `protected` alone forbids.
    pub fn protects(protected: &ProtectedPath) -> PathTest {
        PathTest::of([protected_covers(protected)])
    }

    /// The paths `domain` is granted, as [`DomainRules::judge`] decides:
    /// a host class it holds that covers the path most specifically, or
    /// else the deepest of its layout paths containing the path, when that
    /// one grants anything.
    pub fn grant_test(domain: &DomainRules) -> PathTest {
        let held: Vec<&str> = domain
            .host_classes
            .iter()
            .map(|g| g.class.as_str())
            .collect();
        let unheld: Vec<&HostPath> = HOST_CLASSES
            .iter()
            .filter(|c| !held.contains(&c.name))
            .flat_map(|c| c.paths)
            .collect();
        let mut parts = Vec::new();
        // A held host path decides unless a more specific host path of a
        // class the domain does not hold covers the path too.
        for class in HOST_CLASSES.iter().filter(|c| held.contains(&c.name)) {
            for host in class.paths {
                let beaten = unheld
                    .iter()
                    .filter(|other| {
                        other.specificity() > host.specificity() && overlap(host, other)
                    })
                    .map(|other| host_cover(other))
                    .collect();
                parts.push((vec![host_cover(host)], beaten));
            }
        }
        // A granting layout path decides unless a deeper one that grants
        // nothing holds the path.
        for grant in domain
            .paths
            .iter()
            .filter(|p| p.access != MountAccess::None)
        {
            let denied = domain
                .paths
                .iter()
                .filter(|deeper| {
                    deeper.access == MountAccess::None
                        && deeper.path != grant.path
                        && grant.path.contains(&deeper.path)
                })
                .map(|deeper| Cover::Within(deeper.path.to_string()))
                .collect();
            parts.push((vec![Cover::Within(grant.path.to_string())], denied));
        }
        PathTest::of(parts)
    }

    /// What a container of `domain` may mount, for the message refusing
    /// a path it is not granted.
    pub fn describe_grants(&self, domain: &DomainRules) -> String {
        let layout = self.describe_layout();
        let paths: Vec<String> = domain
            .paths
            .iter()
            .filter(|p| p.access != MountAccess::None)
            .filter(|p| domain.kind == DomainKind::Agent || p.host_path_root)
            .map(|p| at_line(p.path.as_str(), &p.declared_at))
            .collect();
        let list = |items: &[String]| {
            if items.is_empty() {
                "none".to_owned()
            } else {
                items.join(", ")
            }
        };
        let declared = at_line(&format!("`{}`", domain.key), &domain.declared_at);
        match domain.kind {
            DomainKind::Workload => format!(
                "is outside every hostPath root of workload domain {declared} of {layout}: {}; \
                 move it below a root",
                list(&paths)
            ),
            DomainKind::Agent => {
                let classes: Vec<String> = domain
                    .host_classes
                    .iter()
                    .map(|c| at_line(&c.class, &c.declared_at))
                    .collect();
                format!(
                    "is not granted to agent domain {declared} of {layout}: it may mount the layout \
                     paths {} and the host classes {}; grant the path to it in the layout",
                    list(&paths),
                    list(&classes)
                )
            }
        }
    }

    /// `layout `NAME` (FILE)`, for messages.
    pub fn describe_layout(&self) -> String {
        if self.source == layout::manifest::DEFAULT_LAYOUT_NAME {
            format!(
                "the default layout `{}` (semanifest layout show)",
                self.layout
            )
        } else {
            format!("layout `{}` ({})", self.layout, self.source)
        }
    }

    /// `PATH (line N), …` of the protected paths, or `none`.
    pub fn list_protected(&self) -> String {
        if self.rules.protected.is_empty() {
            return "none".to_owned();
        }
        self.rules
            .protected
            .iter()
            .map(|p| at_line(p.path.as_str(), &p.declared_at))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A protected path covers itself, its ancestors and what lies below it,
/// except below a declared path of its own that is not protected.
fn protected_covers(protected: &ProtectedPath) -> (Vec<Cover>, Vec<Cover>) {
    let path = protected.path.to_string();
    (
        vec![Cover::AncestorOrSelf(path.clone()), Cover::Within(path)],
        protected
            .carved_out
            .iter()
            .map(|c| Cover::Within(c.to_string()))
            .collect(),
    )
}

fn host_cover(host: &HostPath) -> Cover {
    let path = host.path.to_owned();
    match host.scope {
        Scope::Subtree => Cover::Within(path),
        Scope::Exact => Cover::Exact(path),
        Scope::NamePrefix => Cover::NamePrefix(path),
    }
}

/// Whether two host paths may cover a path in common (a conservative
/// answer: their directories are nested).
fn overlap(a: &HostPath, b: &HostPath) -> bool {
    let dir = |host: &HostPath| match host.scope {
        Scope::NamePrefix => host.path.rsplit_once('/').map_or("/", |(d, _)| d),
        _ => host.path,
    };
    let (a, b) = (dir(a), dir(b));
    let a = if a.is_empty() { "/" } else { a };
    let b = if b.is_empty() { "/" } else { b };
    layout::model::is_within(a, b) || layout::model::is_within(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::PathTest;
    use k8s::{NormalPath, Verdict};
    use regex::Regex;

    fn default_judgement() -> Judgement {
        // The base type the default layout names (`baseType: true`); the
        // base policy's other types do not matter to hostPaths.
        let base = layout::manifest::BaseFacts {
            types: ["container_file_t".to_owned()].into(),
            adopt_existing: false,
        };
        let parsed = layout::manifest::default_layout(&base).unwrap();
        Judgement::of(&parsed)
    }

    fn is_in(test: &PathTest, raw: &str) -> bool {
        test.terms.iter().any(|term| {
            Regex::new(&term.include).unwrap().is_match(raw)
                && !term
                    .exclude
                    .as_ref()
                    .is_some_and(|e| Regex::new(e).unwrap().is_match(raw))
        })
    }

    /// Written paths: every layout path and host path, a name below and
    /// beside each, an ancestor, each spelled plainly and with `//`, `/./`
    /// and a trailing `/`.
    fn written_paths(judgement: &Judgement) -> Vec<String> {
        let mut normal: Vec<String> = vec!["/".to_owned(), "/var".to_owned()];
        for domain in &judgement.rules.domains {
            normal.extend(domain.paths.iter().map(|p| p.path.to_string()));
        }
        normal.extend(judgement.rules.protected.iter().map(|p| p.path.to_string()));
        for class in HOST_CLASSES {
            normal.extend(class.paths.iter().map(|h| h.path.to_owned()));
        }
        let mut raw = Vec::new();
        for path in normal {
            let parent = path.rsplit_once('/').map_or("/", |(p, _)| p).to_owned();
            for variant in [
                path.clone(),
                format!("{path}/x"),
                format!("{path}x"),
                format!("{path}0n1"),
                format!("{path}/"),
                format!("/{}", path.replace('/', "//")),
                path.replacen('/', "/./", 2),
                if parent.is_empty() {
                    "/".to_owned()
                } else {
                    parent
                },
            ] {
                raw.push(variant);
            }
        }
        raw.sort();
        raw.dedup();
        raw
    }

    #[test]
    fn each_domain_test_grants_what_check_grants() {
        let judgement = default_judgement();
        let raw = written_paths(&judgement);
        let mut granted = 0;
        for domain in &judgement.rules.domains {
            let test = Judgement::grant_test(domain);
            for raw in &raw {
                let normal = NormalPath::parse(raw).unwrap();
                let expected = domain.judge(&normal) != Verdict::NotGranted;
                granted += usize::from(expected);
                assert_eq!(
                    is_in(&test, raw),
                    expected,
                    "{raw} for {} ({test:?})",
                    domain.selinux_type
                );
            }
        }
        assert!(granted > 50, "the corpus exercises grants ({granted})");
        // Control: without the exclusions (a more specific class the
        // domain lacks, a deeper path granting nothing) the tests grant
        // too much, and the comparison says so.
        let naive_wrong = judgement
            .rules
            .domains
            .iter()
            .flat_map(|domain| {
                let mut naive = Judgement::grant_test(domain);
                naive.terms.iter_mut().for_each(|t| t.exclude = None);
                raw.iter()
                    .filter(|raw| {
                        let normal = NormalPath::parse(raw).unwrap();
                        is_in(&naive, raw) != (domain.judge(&normal) != Verdict::NotGranted)
                    })
                    .map(|raw| format!("{} {raw}", domain.selinux_type))
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>();
        assert!(
            naive_wrong.iter().any(|w| w.contains("/sys/fs/bpf"))
                && naive_wrong.iter().any(|w| w.contains("/var/log/audit")),
            "{naive_wrong:?}"
        );
    }

    #[test]
    fn the_protected_test_is_checks_protection() {
        let judgement = default_judgement();
        let test = judgement.protected_test();
        for raw in written_paths(&judgement) {
            let normal = NormalPath::parse(&raw).unwrap();
            let expected = judgement.rules.protection(&normal).is_some();
            assert_eq!(is_in(&test, &raw), expected, "{raw}");
            let by_one = judgement
                .rules
                .protected
                .iter()
                .any(|p| is_in(&Judgement::protects(p), &raw));
            assert_eq!(by_one, expected, "{raw}");
        }
        // The carve-out is not protected; what is beside it is.
        assert!(!is_in(&test, "/var/lib/kubelet/pods/x"));
        assert!(is_in(&test, "/var/lib/kubelet/checkpoints"));
    }
}
