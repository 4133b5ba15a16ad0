//! The rules `check` reports besides the manifest's (`manifest::rules`)
//! and the Kubernetes ones (in `k8s`): their ids are part of the JSON and
//! SARIF contract.

use layout::diag::{rule, Rule};

rule!(FC_SHADOWED, "layout-fc-shadowed", "LayoutFileContextShadowed", Error,
    "A layout path's own file_contexts spec never wins for it.",
    "libselinux picks exact specs over regexes and the last matching regex; if another spec wins, the path gets another label than the layout says.");
rule!(FC_ORDER, "layout-fc-order", "LayoutFileContextOrder", Warning,
    "Two overlapping specs are ordered only by string comparison.",
    "secilc sorts specs by stem and length and then by strcmp; a winner decided by spelling changes when a directory is renamed.");
rule!(FC_BASE_OVERLAP, "layout-fc-base", "LayoutFileContextBase", Warning,
    "The base policy already has a specific label for a layout path.",
    "The layout's spec wins, but the base policy's rules for that path no longer apply; make sure that is intended.");
rule!(BELOW_PROTECTED, "layout-below-protected", "LayoutBelowProtected", Note,
    "A granted path lies below a protected path the grantee may not traverse.",
    "By design the grantee reaches it only through bind mounts made by a runtime or trusted domain (as kubelet does for pod volumes).");
rule!(
    POLICY_SECILC,
    "policy-secilc",
    "PolicySecilc",
    Error,
    "secilc rejected the policy.",
    "A policy that does not compile cannot be loaded on a node."
);
rule!(POLICY_NEVERALLOW, "policy-neverallow", "PolicyNeverallow", Error,
    "A rule in the policy gives a domain access to a protected path it was not granted.",
    "secilc proves protections over the whole policy, extra CIL included; this rule would open protected data.");
rule!(
    POLICY_TRANSITION,
    "policy-transition",
    "PolicyTransition",
    Error,
    "A workload or agent domain can transition into a domain that may access a protected type.",
    "A pod or node agent that can enter such a domain reaches the protected data with that domain's rights."
);
rule!(
    LABELS_DRIFT,
    "labels-drift",
    "LabelsDrift",
    Error,
    "An object's security.selinux label differs from what file_contexts says.",
    "The policy protects labels, not paths: a wrong label is either a hole or an outage."
);
rule!(
    LABELS_ERROR,
    "labels-error",
    "LabelsError",
    Error,
    "An object's label could not be read.",
    "An object whose label cannot be checked may carry any label."
);
rule!(APPLY_DRIFT, "apply-drift", "ApplyDrift", Error,
    "A declared directory has another mode or owner than the layout declares.",
    "`semanifest apply` changes it back at the next run; until then the directory is open to, or closed to, someone the layout did not intend.");
rule!(APPLY_MISSING, "apply-missing", "ApplyMissing", Warning,
    "A declared directory does not exist yet.",
    "`semanifest apply` creates it, born with its label; a service that creates it first gets its parent's type unless the policy names a transition.");
rule!(APPLY_BLOCKED, "apply-blocked", "ApplyBlocked", Error,
    "Something apply never replaces is in the way of a declared directory (a file, a symlink), or it cannot be reached.",
    "`semanifest apply` deletes nothing and follows no symlink, so the directory cannot be placed until someone looks at what is there.");
rule!(APPLY_KEPT_SYMLINK, "apply-kept-symlink", "ApplyKeptSymlink", Note,
    "A declared path named with --keep-symlink is a symlink out of the layout, kept as the image holds it.",
    "`semanifest apply --keep-symlink` keeps it the same way and never follows it; the boot units pass it for every such path they found in the image.");

rule!(STORE_MAPPING, "store-mapping", "StoreMapping", Error,
    "A layout domain cannot run as the store type it maps to.",
    "A domain mapped to a file type, to a type the store lacks, or a workload mapped to a privileged container domain cannot be confined as the layout says.");
rule!(STORE_FILECON, "store-filecon", "StoreFileContext", Error,
    "The store's file contexts would label a layout path otherwise, and the module cannot win.",
    "A `semanage fcontext` entry (file_contexts.local) beats every module, and some store specs have no equivalent that sorts after them; the path would carry the store's label, not the layout's.");
rule!(STORE_FILECON_RESOLVED, "store-filecon-resolved", "StoreFileContextResolved", Note,
    "A store file context collided with or shadowed a layout path; the module writes lines that win.",
    "An identical regex in two modules is deduplicated by secilc in module-name order, and a store spec that sorts later wins; the module's lines are chosen so neither decides, and proven by lookups.");
rule!(STORE_FILECON_KEPT, "store-filecon-kept", "StoreFileContextKept", Note,
    "A store file context keeps labelling what it names at or below an unprotected layout path.",
    "Below unprotected paths the store's refinements (e.g. container image layers) stay, and an unprotected path with the base policy's own type (`baseType: true`) is left to the store altogether; name the path in the layout with a type of its own, or protect it, to change it.");
rule!(STORE_FILECON_ALIASED, "store-filecon-aliased", "StoreFileContextAliased", Note,
    "The store's substitution files alias a layout path elsewhere; it is labelled through the alias.",
    "libselinux rewrites keys below an alias (e.g. /var/mnt → /mnt) before matching, so the layout's type is given to the real path: by the store's own lines when they already give it, else by the module's.");
rule!(STORE_PREDICTION, "store-prediction", "StorePrediction", Warning,
    "The store compiled here differs from what the store built itself.",
    "The predicted policy.33 is then not byte-for-byte what semodule will install (local customisations, another libsepol).");
rule!(STORE_REACH, "store-reach", "StoreReach", Note,
    "Domains outside the workload set can still reach a protected type, by the store's design.",
    "On a distribution, unconfined and administrative domains reach every file type; the protection holds against workloads, and the rest is shown, not hidden.");
rule!(STORE_PROOF, "store-proof", "StoreProof", Error,
    "The layout's protections were not proven on the store.",
    "The secilc run does not enforce neverallows (a probe policy that breaks one compiled), so nothing it accepted is proven.");
rule!(STORE_NEVERALLOWS, "store-neverallows", "StoreNeverallows", Note,
    "The store's own modules break some of its neverallows.",
    "A store with expand-check=0 is installed without neverallow checks; its own violations are honoured as the store honours them, and only the layout's neverallows decide.");
rule!(STORE_ACCESS_LOST, "store-access-lost", "StoreAccessLost", Warning,
    "Store domains lose access to a path the layout gives a new type.",
    "A re-typed path leaves the store's rules on its old type behind; below a protected path only its store owners keep their access, so every service that needed it stops working on an enforcing node.");

/// Every rule of this module, for documentation and SARIF.
pub static RULES: [&Rule; 23] = [
    &FC_SHADOWED,
    &FC_ORDER,
    &FC_BASE_OVERLAP,
    &BELOW_PROTECTED,
    &POLICY_SECILC,
    &POLICY_NEVERALLOW,
    &POLICY_TRANSITION,
    &LABELS_DRIFT,
    &LABELS_ERROR,
    &APPLY_DRIFT,
    &APPLY_MISSING,
    &APPLY_BLOCKED,
    &APPLY_KEPT_SYMLINK,
    &STORE_MAPPING,
    &STORE_FILECON,
    &STORE_FILECON_RESOLVED,
    &STORE_FILECON_KEPT,
    &STORE_FILECON_ALIASED,
    &STORE_PREDICTION,
    &STORE_REACH,
    &STORE_PROOF,
    &STORE_NEVERALLOWS,
    &STORE_ACCESS_LOST,
];
