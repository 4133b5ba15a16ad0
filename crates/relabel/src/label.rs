//! Deciding whether a stored `security.selinux` value must be rewritten.
//!
//! Pure functions over bytes: no I/O, no allocation unless a new value has to
//! be built (`--type-only` with a different type).

use std::borrow::Cow;

use super::LabelScope;

/// What the walker should do with one object.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision<'a> {
    /// The stored label already satisfies the spec.
    Keep,
    /// Store this context (written with a trailing NUL, like libselinux).
    Write(Cow<'a, str>),
}

/// The stored value as libselinux would compare it: one trailing NUL is not
/// part of the context. An empty value counts as "no label" so it gets
/// repaired (setfiles 3.4 fails on it instead).
pub(crate) fn stored_context(raw: &[u8]) -> Option<&[u8]> {
    let value = raw.strip_suffix(b"\0").unwrap_or(raw);
    (!value.is_empty()).then_some(value)
}

/// Compares the stored label with the spec's context.
///
/// `Full` (setfiles `-F`) writes the spec's context whenever the bytes
/// differ. `TypeOnly` (restorecon's default) only looks at the type and keeps
/// the stored user, role and range; a stored value that is not a context at
/// all is replaced by the spec's context, where restorecon would fail.
pub(crate) fn decide<'a>(
    stored: Option<&[u8]>,
    expected: &'a str,
    scope: LabelScope,
) -> Decision<'a> {
    let Some(stored) = stored else {
        return Decision::Write(Cow::Borrowed(expected));
    };
    if stored == expected.as_bytes() {
        return Decision::Keep;
    }
    match scope {
        LabelScope::Full => Decision::Write(Cow::Borrowed(expected)),
        LabelScope::TypeOnly => {
            let (Some(current), Some(wanted)) = (
                ContextParts::parse(stored),
                ContextParts::parse(expected.as_bytes()),
            ) else {
                return Decision::Write(Cow::Borrowed(expected));
            };
            if current.type_ == wanted.type_ {
                return Decision::Keep;
            }
            // The stored value is ours to keep byte for byte except the type,
            // but it must be valid UTF-8 to become a `str`; if not, it was not
            // a real context anyway.
            match current.with_type(wanted.type_) {
                Some(merged) => Decision::Write(Cow::Owned(merged)),
                None => Decision::Write(Cow::Borrowed(expected)),
            }
        }
    }
}

/// `user:role:type[:range]`, split like libselinux's `context_new`: the
/// range is everything after the third colon (it may contain colons itself).
struct ContextParts<'a> {
    user: &'a [u8],
    role: &'a [u8],
    type_: &'a [u8],
    range: Option<&'a [u8]>,
}

impl<'a> ContextParts<'a> {
    fn parse(context: &'a [u8]) -> Option<Self> {
        let mut parts = context.splitn(4, |&b| b == b':');
        let user = parts.next()?;
        let role = parts.next()?;
        let type_ = parts.next()?;
        let range = parts.next();
        if user.is_empty() || role.is_empty() || type_.is_empty() {
            return None;
        }
        Some(Self {
            user,
            role,
            type_,
            range,
        })
    }

    fn with_type(&self, type_: &[u8]) -> Option<String> {
        let mut merged = Vec::with_capacity(64);
        merged.extend_from_slice(self.user);
        merged.push(b':');
        merged.extend_from_slice(self.role);
        merged.push(b':');
        merged.extend_from_slice(type_);
        if let Some(range) = self.range {
            merged.push(b':');
            merged.extend_from_slice(range);
        }
        String::from_utf8(merged).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VAR: &str = "system_u:object_r:var_t:s0";

    #[test]
    fn trailing_nul_is_insignificant_and_empty_means_unlabelled() {
        assert_eq!(stored_context(b"a:b:c\0"), Some(&b"a:b:c"[..]));
        assert_eq!(stored_context(b"a:b:c"), Some(&b"a:b:c"[..]));
        assert_eq!(stored_context(b""), None);
        assert_eq!(stored_context(b"\0"), None);
        // Only one NUL is a terminator; anything else is corruption to repair.
        assert_eq!(stored_context(b"a:b:c\0\0"), Some(&b"a:b:c\0"[..]));
    }

    #[test]
    fn full_scope_compares_whole_contexts() {
        let cases: &[(Option<&[u8]>, Decision<'_>)] = &[
            (None, Decision::Write(Cow::Borrowed(VAR))),
            (Some(VAR.as_bytes()), Decision::Keep),
            (
                Some(b"unconfined_u:object_r:var_t:s0"),
                Decision::Write(Cow::Borrowed(VAR)),
            ),
            (
                Some(b"system_u:object_r:var_t:s0:c1"),
                Decision::Write(Cow::Borrowed(VAR)),
            ),
            (Some(b"garbage"), Decision::Write(Cow::Borrowed(VAR))),
        ];
        for (stored, want) in cases {
            assert_eq!(&decide(*stored, VAR, LabelScope::Full), want, "{stored:?}");
        }
    }

    #[test]
    fn type_only_keeps_user_role_and_range() {
        let cases: &[(Option<&[u8]>, Decision<'_>)] = &[
            (None, Decision::Write(Cow::Borrowed(VAR))),
            (
                Some(b"unconfined_u:object_r:var_t:s0:c1,c2"),
                Decision::Keep,
            ),
            (
                Some(b"unconfined_u:object_r:etc_t:s0-s0:c0.c1023"),
                Decision::Write(Cow::Owned(
                    "unconfined_u:object_r:var_t:s0-s0:c0.c1023".into(),
                )),
            ),
            // No range stored: none is added (libselinux sets a NULL range).
            (
                Some(b"u:r:etc_t"),
                Decision::Write(Cow::Owned("u:r:var_t".into())),
            ),
            // Not a context: restorecon would fail, we repair.
            (Some(b"garbage"), Decision::Write(Cow::Borrowed(VAR))),
            (Some(b"u::etc_t:s0"), Decision::Write(Cow::Borrowed(VAR))),
            (Some(b"u:r:etc_t:\xff"), Decision::Write(Cow::Borrowed(VAR))),
        ];
        for (stored, want) in cases {
            assert_eq!(
                &decide(*stored, VAR, LabelScope::TypeOnly),
                want,
                "{stored:?}"
            );
        }
    }
}
