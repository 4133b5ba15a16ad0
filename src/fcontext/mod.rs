//! file_contexts engine: loads libselinux-format specs and answers lookups
//! exactly like libselinux 3.4's `selabel_lookup` (file backend).
//!
//! (API contract; implementation in progress on the `fcontext` branch.)

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
