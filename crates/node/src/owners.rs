//! Owners as the target root knows them: a layout's `owner: etcd` means
//! the uid and login group that `ROOT/etc/passwd` gives `etcd` (what
//! `chown etcd:` does), never the running host's users. `uid:gid` is taken
//! as is.

use std::collections::BTreeMap;

use serde::Serialize;

use super::NodeError;
use fsroot::{self, Root};
use layout::model::Owner;

/// A uid and gid pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Ids {
    pub uid: u32,
    pub gid: u32,
}

impl std::fmt::Display for Ids {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.uid, self.gid)
    }
}

/// The account databases are small; a larger file is refused.
const DATABASE_LIMIT: u64 = 16 << 20;

/// `ROOT/etc/passwd`, read once.
#[derive(Debug, Default)]
pub struct Accounts {
    users: BTreeMap<String, Ids>,
    /// Where the users came from, for messages.
    passwd: String,
}

impl Accounts {
    /// Reads `etc/passwd` below `root` (resolved without following
    /// symlinks).
    pub(crate) fn read(root: &Root) -> Result<Self, NodeError> {
        let passwd_key = b"/etc/passwd";
        let passwd = root
            .read_file(passwd_key, DATABASE_LIMIT)
            .map_err(NodeError::Accounts)?;
        Ok(Self {
            users: parse_passwd(&passwd),
            passwd: fsroot::EscapedPath(&root.display(passwd_key)).to_string(),
        })
    }

    /// The ids of `owner`; a name must be in `etc/passwd`.
    pub(crate) fn resolve(&self, owner: &Owner) -> Result<Ids, OwnerError> {
        match owner {
            Owner::Ids { uid, gid } => check_ids(Ids {
                uid: *uid,
                gid: *gid,
            }),
            Owner::Name(name) => {
                self.users
                    .get(name)
                    .copied()
                    .ok_or_else(|| OwnerError::UnknownUser {
                        name: name.clone(),
                        passwd: self.passwd.clone(),
                    })
            }
        }
    }
}

/// Why a layout's owner has no ids.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OwnerError {
    #[error("owner {0}: 4294967295 means \"unchanged\" to chown and cannot own a file")]
    Unchanged(Ids),
    #[error("user `{name}` is not in {passwd}")]
    UnknownUser { name: String, passwd: String },
    #[error("user `{0}`: no accounts read")]
    NoAccounts(String),
}

/// A layout path whose owner has no ids, with the layout line naming it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("owner of {path} (layout line {line}): {error}")]
pub struct OwnerProblem {
    pub path: String,
    pub line: u32,
    pub error: OwnerError,
}

/// `(uid_t)-1` means "leave unchanged" to `chown`: never an owner.
pub(crate) fn check_ids(ids: Ids) -> Result<Ids, OwnerError> {
    if ids.uid == u32::MAX || ids.gid == u32::MAX {
        return Err(OwnerError::Unchanged(ids));
    }
    Ok(ids)
}

/// `name:password:uid:gid:...` lines; malformed lines are skipped, as
/// `getpwnam` skips them. The first entry of a name wins.
fn parse_passwd(text: &[u8]) -> BTreeMap<String, Ids> {
    let mut users = BTreeMap::new();
    for line in text.split(|&b| b == b'\n') {
        let fields: Vec<&[u8]> = line.split(|&b| b == b':').collect();
        let [name, _password, uid, gid, ..] = fields.as_slice() else {
            continue;
        };
        let (Some(name), Some(uid), Some(gid)) = (text_of(name), number(uid), number(gid)) else {
            continue;
        };
        users.entry(name).or_insert(Ids { uid, gid });
    }
    users
}

fn text_of(field: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(field).ok()?;
    (!text.is_empty() && !text.starts_with(['#', '+', '-'])).then(|| text.to_owned())
}

fn number(field: &[u8]) -> Option<u32> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd_lines_give_uid_and_login_group() {
        let users = parse_passwd(
            b"root:x:0:0:root:/root:/bin/sh\n\
              # comment\n\
              broken line\n\
              etcd:x:998:997::/var/lib/etcd:/usr/sbin/nologin\n\
              etcd:x:1:1::/:/bin/false\n\
              bad:x:notanumber:1::/:\n",
        );
        assert_eq!(users["etcd"], Ids { uid: 998, gid: 997 });
        assert_eq!(users["root"], Ids { uid: 0, gid: 0 });
        assert!(!users.contains_key("bad"));
        assert_eq!(users.len(), 2);
    }

    #[test]
    fn minus_one_is_never_an_owner() {
        assert!(check_ids(Ids { uid: 1, gid: 2 }).is_ok());
        assert!(check_ids(Ids {
            uid: u32::MAX,
            gid: 2
        })
        .is_err());
    }
}
