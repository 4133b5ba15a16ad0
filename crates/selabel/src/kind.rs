//! The file kinds a lookup distinguishes, and every way file_contexts
//! tooling writes them: the one table of `S_IFMT` bits and type fields.

/// The file type a lookup is for, as `selabel_lookup`'s `mode` argument.
/// `Any` is mode 0: every spec matches regardless of its type field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    Any,
    Dir,
    File,
    Symlink,
    CharDev,
    BlockDev,
    Fifo,
    Socket,
}

/// One kind as `stat` and file_contexts write it.
struct Row {
    kind: FileKind,
    /// The `S_IFMT` bits of `st_mode` (0 for `Any`).
    mode: u32,
    /// The type field of a file_contexts line (`Any`: none), libselinux's
    /// `string_to_mode`.
    field: Option<&'static str>,
}

/// Every kind, in [`FileKind`]'s order.
const TABLE: [Row; 8] = [
    Row {
        kind: FileKind::Any,
        mode: 0,
        field: None,
    },
    Row {
        kind: FileKind::Dir,
        mode: 0o040000,
        field: Some("-d"),
    },
    Row {
        kind: FileKind::File,
        mode: 0o100000,
        field: Some("--"),
    },
    Row {
        kind: FileKind::Symlink,
        mode: 0o120000,
        field: Some("-l"),
    },
    Row {
        kind: FileKind::CharDev,
        mode: 0o020000,
        field: Some("-c"),
    },
    Row {
        kind: FileKind::BlockDev,
        mode: 0o060000,
        field: Some("-b"),
    },
    Row {
        kind: FileKind::Fifo,
        mode: 0o010000,
        field: Some("-p"),
    },
    Row {
        kind: FileKind::Socket,
        mode: 0o140000,
        field: Some("-s"),
    },
];

const S_IFMT: u32 = 0o170000;

impl FileKind {
    /// Every kind, `Any` first: handy for exhaustive tests.
    pub const ALL: [FileKind; 8] = {
        let mut all = [FileKind::Any; 8];
        let mut i = 0;
        while i < TABLE.len() {
            all[i] = TABLE[i].kind;
            i += 1;
        }
        all
    };

    fn row(self) -> &'static Row {
        &TABLE[self as usize]
    }

    /// The kind of an `st_mode` (only the `S_IFMT` bits are looked at); 0 is
    /// [`FileKind::Any`]. `None` for type bits no file can have.
    pub fn from_mode(mode: u32) -> Option<FileKind> {
        let bits = mode & S_IFMT;
        TABLE
            .iter()
            .find(|row| row.mode == bits)
            .map(|row| row.kind)
    }

    /// The `mode` to pass to `selabel_lookup` for this kind.
    pub fn selabel_mode(self) -> u32 {
        self.row().mode
    }

    /// The type field that selects this kind in a file_contexts line
    /// (`--`, `-d`, …); `None` for [`FileKind::Any`], which has none.
    pub fn type_field(self) -> Option<&'static str> {
        self.row().field
    }

    /// The kind a file_contexts type field selects; `None` for anything
    /// libselinux refuses.
    pub fn from_type_field(field: &[u8]) -> Option<FileKind> {
        TABLE
            .iter()
            .find(|row| row.field.map(str::as_bytes) == Some(field))
            .map(|row| row.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_declaration_order() {
        for (i, row) in TABLE.iter().enumerate() {
            assert_eq!(row.kind as usize, i);
        }
        assert_eq!(FileKind::ALL.len(), TABLE.len());
    }

    #[test]
    fn modes_and_fields_round_trip() {
        for kind in FileKind::ALL {
            assert_eq!(FileKind::from_mode(kind.selabel_mode() | 0o644), Some(kind));
            if let Some(field) = kind.type_field() {
                assert_eq!(FileKind::from_type_field(field.as_bytes()), Some(kind));
            }
        }
        assert_eq!(FileKind::from_mode(0o030000), None);
        assert_eq!(FileKind::from_type_field(b"-x"), None);
        assert_eq!(FileKind::from_type_field(b""), None);
    }
}
