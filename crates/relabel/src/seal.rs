//! Operand seals: an unchanged `--skip-unchanged` pass without compiling
//! the file contexts.
//!
//! Subtree digests let a pass skip every directory whose live specs did
//! not change, but finding a directory's live specs takes the compiled
//! matcher, and compiling a distribution's file contexts is most of the
//! cost of a pass that finds nothing to do. So the walk also leaves a seal
//! on each operand directory whose subtree digest it wrote or confirmed:
//!
//! ```text
//! v1:HEX(sha256(version, specs digest, key, scope, mounts, stored subtree digest, label)):LABEL
//! ```
//!
//! where the specs digest is [`selabel::ParsedContexts::digest`]
//! (taken before compiling), the stored subtree digest is empty for an
//! operand that has none (a path substitution below it, as Debian's
//! `/var/run` → `/run`, leaves it untracked), and LABEL is the label the
//! specs give the operand. A seal is written when the operand's whole
//! subtree was labelled or confirmed without error, exclusion, skipped
//! mount or hard-link conflict. A later pass with the same inputs checks it with three xattr
//! reads per operand: the hash must come out the same (same specs and
//! options, the same subtree digest still stored, LABEL authentic) and the
//! operand's own label must satisfy LABEL. Then nothing is compiled or
//! walked. Whatever removes a subtree digest removes the seal with it, and
//! a seal covers the digest's value, so a tool that removes only the
//! digest voids the seal too.

use std::path::PathBuf;
use std::time::Instant;

use rustix::io::Errno;
use sha2::{Digest as _, Sha256};

use super::label::{decide, stored_context, Decision};
use super::{
    hex, Digests, RelabelError, RelabelOptions, Summary, DIGEST_VERSION, DIGEST_XATTR, XATTR_NAME,
};
use fsroot::Handle;

/// The xattr that holds an operand's seal. `trusted.*`, like the digest,
/// so only `CAP_SYS_ADMIN` can forge one.
pub const SEAL_XATTR: &str = "trusted.semanifest.seal";

/// Longest seal or digest value read; a longer one is not ours.
const VALUE_LIMIT: usize = 4096;

/// What a seal covers besides the operand's own state (of the options:
/// the label scope and the mount policy).
#[derive(Clone, Copy)]
pub(crate) struct SealInputs<'k> {
    pub specs: [u8; 32],
    pub key: &'k [u8],
    pub options: &'k RelabelOptions,
}

impl SealInputs<'_> {
    fn hash(&self, subtree_digest: &[u8], label: &[u8]) -> [u8; 32] {
        let mut hasher = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(b"semanifest operand seal");
        field(&DIGEST_VERSION.to_le_bytes());
        field(&self.specs);
        field(self.key);
        for tag in self.options.digest_tags() {
            field(tag);
        }
        field(subtree_digest);
        field(label);
        hasher.finalize().into()
    }

    /// The value stored for an operand whose subtree digest is
    /// `subtree_digest` and whose specs give it `label`.
    pub(crate) fn value(&self, subtree_digest: &[u8], label: &str) -> Box<[u8]> {
        let mut value = b"v1:".to_vec();
        value.extend_from_slice(hex(&self.hash(subtree_digest, label.as_bytes())).as_bytes());
        value.push(b':');
        value.extend_from_slice(label.as_bytes());
        value.into()
    }

    /// The label a stored seal vouches for, if it is one for these inputs
    /// and `subtree_digest`.
    fn vouched_label<'v>(&self, seal: &'v [u8], subtree_digest: &[u8]) -> Option<&'v [u8]> {
        let rest = seal.strip_prefix(b"v1:")?;
        let (hash, label) = (rest.get(..64)?, rest.get(64..)?.strip_prefix(b":")?);
        (hash == hex(&self.hash(subtree_digest, label)).as_bytes()).then_some(label)
    }
}

/// Removes an object's seal and subtree digest (`ENODATA`, none there, is
/// not an error). One `listxattr` first: most directories hold neither,
/// and a writing walk asks this of every directory it passes.
pub(crate) fn forget(handle: Handle<'_>) -> rustix::io::Result<()> {
    let mut names = [0u8; 1024];
    let present: Vec<&str> = match handle.list(&mut names) {
        Ok(len) => [SEAL_XATTR, DIGEST_XATTR]
            .into_iter()
            .filter(|wanted| {
                names[..len]
                    .split(|&byte| byte == 0)
                    .any(|name| name == wanted.as_bytes())
            })
            .collect(),
        // Too many names to list here: try both.
        Err(Errno::RANGE) => vec![SEAL_XATTR, DIGEST_XATTR],
        Err(errno) => return Err(errno),
    };
    for name in present {
        match handle.remove(name) {
            Ok(()) | Err(Errno::NODATA) => {}
            Err(errno) => return Err(errno),
        }
    }
    Ok(())
}

/// With [`Digests::Skip`] and [`RelabelOptions::specs_digest`]: the
/// summary of a pass with nothing to do, if every operand is a directory
/// whose seal holds for these options and whose own label is right; `None`
/// when any one is not (then run [`super::relabel`]). Never writes.
///
/// Excludes and forced passes are never sealed, nor a run without the
/// specs digest: `None`.
pub fn sealed(
    paths: &[PathBuf],
    options: &RelabelOptions,
) -> Result<Option<Summary>, RelabelError> {
    let started = Instant::now();
    if paths.is_empty() {
        return Err(RelabelError::NoPaths);
    }
    let Some(specs) = options.specs_digest else {
        return Ok(None);
    };
    if options.digests != Digests::Skip || !options.excludes.is_empty() {
        return Ok(None);
    }
    let root = options.open_root()?;
    for path in paths {
        let key = root.key(path)?;
        let entry = root.resolve(&key)?;
        if entry.kind() != rustix::fs::FileType::Directory {
            return Ok(None);
        }
        let inputs = SealInputs {
            specs,
            key: &key,
            options,
        };
        let read = |name: &str| -> Option<Vec<u8>> {
            let mut buffer = vec![0u8; VALUE_LIMIT];
            let len = entry.handle().get(name, &mut buffer).ok()?;
            buffer.truncate(len);
            Some(buffer)
        };
        let Some(seal) = read(SEAL_XATTR) else {
            return Ok(None);
        };
        // An operand without a subtree digest of its own is sealed over
        // none.
        let digest = read(DIGEST_XATTR).unwrap_or_default();
        let Some(vouched) = inputs.vouched_label(&seal, &digest) else {
            return Ok(None);
        };
        let Ok(vouched) = std::str::from_utf8(vouched) else {
            return Ok(None);
        };
        let stored = read(XATTR_NAME);
        let stored = stored.as_deref().and_then(stored_context);
        if decide(stored, vouched, options.scope) != Decision::Keep {
            return Ok(None);
        }
    }
    let operands = paths.len() as u64;
    Ok(Some(Summary {
        examined: operands,
        unchanged: operands,
        skipped: operands,
        sealed: operands,
        seconds: started.elapsed().as_secs_f64(),
        ..Summary::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LabelScope;

    fn inputs<'k>(key: &'k [u8], options: &'k RelabelOptions) -> SealInputs<'k> {
        SealInputs {
            specs: [7; 32],
            key,
            options,
        }
    }

    #[test]
    fn a_seal_vouches_only_for_its_own_inputs() {
        let type_only = RelabelOptions {
            scope: LabelScope::TypeOnly,
            ..RelabelOptions::default()
        };
        let label = "system_u:object_r:var_t:s0";
        let seal = inputs(b"/var", &type_only).value(b"v1:digest", label);
        assert_eq!(
            inputs(b"/var", &type_only).vouched_label(&seal, b"v1:digest"),
            Some(label.as_bytes())
        );
        // Another digest stored, another operand, other specs, scope or
        // label: void.
        assert_eq!(
            inputs(b"/var", &type_only).vouched_label(&seal, b"v1:other"),
            None
        );
        assert_eq!(
            inputs(b"/srv", &type_only).vouched_label(&seal, b"v1:digest"),
            None
        );
        let mut other = inputs(b"/var", &type_only);
        other.specs = [8; 32];
        assert_eq!(other.vouched_label(&seal, b"v1:digest"), None);
        let full = RelabelOptions {
            scope: LabelScope::Full,
            ..type_only.clone()
        };
        assert_eq!(
            inputs(b"/var", &full).vouched_label(&seal, b"v1:digest"),
            None
        );
        let mut forged = seal.to_vec();
        let at = forged.len() - 5;
        forged[at..].copy_from_slice(b"etc_t");
        assert_eq!(
            inputs(b"/var", &type_only).vouched_label(&forged, b"v1:digest"),
            None
        );
        assert_eq!(
            inputs(b"/var", &type_only).vouched_label(b"v1:short", b"v1:digest"),
            None
        );
    }
}
