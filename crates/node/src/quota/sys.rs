//! The kernel interfaces of project quotas that neither rustix nor nix
//! wraps: the one place of the workspace that allows `unsafe`, audited
//! here call by call.
//!
//! - `FS_IOC_FSGETXATTR` / `FS_IOC_FSSETXATTR` on an open fd: an object's
//!   project ID and extended flags (`PROJINHERIT`), through rustix's
//!   typed `ioctl` patterns.
//! - `file_getattr(2)` / `file_setattr(2)` (Linux 6.17): the same by name
//!   in an open directory, `AT_SYMLINK_NOFOLLOW`, without opening the
//!   object, so symlinks, FIFOs, sockets and devices get their project ID
//!   too. `ENOSYS` on older kernels, where callers open regular files and
//!   directories only.
//! - `quotactl_fd(2)` (Linux 5.14) with `Q_XGETQSTATV`, `Q_GETQUOTA` and
//!   `Q_SETQUOTA` for `PRJQUOTA`: the filesystem is named by an fd on it,
//!   never by its block device's path. The same calls serve ext4 and XFS.
//!
//! Every struct is `#[repr(C)]` with the kernel's layout (sizes asserted
//! at compile time); every pointer handed to the kernel is to a live,
//! initialised value of that struct, with the size the kernel expects.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::mem::size_of;
use std::os::fd::{AsRawFd, BorrowedFd};

use rustix::io::{Errno, Result};
use rustix::ioctl::{ioctl, opcode, Getter, Setter};

/// `struct fsxattr` (include/uapi/linux/fs.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fsxattr {
    pub xflags: u32,
    extsize: u32,
    nextents: u32,
    pub projid: u32,
    cowextsize: u32,
    pad: [u8; 8],
}
const _: () = assert!(size_of::<Fsxattr>() == 28);

/// `FS_XFLAG_PROJINHERIT`: objects created in the directory take its
/// project ID.
pub const XFLAG_PROJINHERIT: u32 = 0x0000_0200;

const FS_IOC_FSGETXATTR: rustix::ioctl::Opcode = opcode::read::<Fsxattr>(b'X', 31);
const FS_IOC_FSSETXATTR: rustix::ioctl::Opcode = opcode::write::<Fsxattr>(b'X', 32);

/// The project ID and flags of the object `fd` is open on (not `O_PATH`:
/// ioctls need a real open file).
pub fn get_fsxattr(fd: BorrowedFd<'_>) -> Result<Fsxattr> {
    // SAFETY: FS_IOC_FSGETXATTR writes one `struct fsxattr`, which
    // `Fsxattr` mirrors (size asserted above), into the getter's buffer.
    unsafe { ioctl(fd, Getter::<FS_IOC_FSGETXATTR, Fsxattr>::new()) }
}

/// Sets the project ID and flags of the object `fd` is open on.
pub fn set_fsxattr(fd: BorrowedFd<'_>, attr: Fsxattr) -> Result<()> {
    // SAFETY: FS_IOC_FSSETXATTR reads one `struct fsxattr` from the
    // setter's value, which lives for the call.
    unsafe { ioctl(fd, Setter::<FS_IOC_FSSETXATTR, Fsxattr>::new(attr)) }
}

/// `struct file_attr` (include/uapi/linux/fs.h, `FILE_ATTR_SIZE_VER0`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct FileAttr {
    xflags: u64,
    extsize: u32,
    nextents: u32,
    projid: u32,
    cowextsize: u32,
}
const _: () = assert!(size_of::<FileAttr>() == 24);

/// The syscall numbers of `file_getattr` and `file_setattr`: the shared
/// table every architecture below uses for calls added since Linux 5.1.
#[cfg(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64",
    target_arch = "loongarch64",
    target_arch = "powerpc64",
    target_arch = "s390x"
))]
const FILE_ATTR_SYSCALLS: Option<(libc::c_long, libc::c_long)> = Some((468, 469));
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64",
    target_arch = "loongarch64",
    target_arch = "powerpc64",
    target_arch = "s390x"
)))]
const FILE_ATTR_SYSCALLS: Option<(libc::c_long, libc::c_long)> = None;

fn last_errno() -> Errno {
    Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// `file_getattr(dir, name, AT_SYMLINK_NOFOLLOW)`: the project ID and
/// flags of entry `name` of `dir`, whatever its type, the entry itself
/// (never a symlink's target). `ENOSYS` before Linux 6.17.
pub fn get_by_name(dir: BorrowedFd<'_>, name: &CStr) -> Result<Fsxattr> {
    let Some((get, _)) = FILE_ATTR_SYSCALLS else {
        return Err(Errno::NOSYS);
    };
    let mut attr = FileAttr::default();
    // SAFETY: file_getattr writes at most `usize` bytes (the size passed)
    // to `attr`, a live `struct file_attr`; `name` is NUL-terminated.
    let ret = unsafe {
        libc::syscall(
            get,
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut attr as *mut FileAttr,
            size_of::<FileAttr>(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if ret < 0 {
        return Err(last_errno());
    }
    Ok(Fsxattr {
        // The flags that fit FS_IOC_FSGETXATTR's 32 bits are all there are.
        xflags: attr.xflags as u32,
        extsize: attr.extsize,
        nextents: attr.nextents,
        projid: attr.projid,
        cowextsize: attr.cowextsize,
        pad: [0; 8],
    })
}

/// `file_setattr(dir, name, AT_SYMLINK_NOFOLLOW)`: sets what
/// [`get_by_name`] reads.
pub fn set_by_name(dir: BorrowedFd<'_>, name: &CStr, attr: Fsxattr) -> Result<()> {
    let Some((_, set)) = FILE_ATTR_SYSCALLS else {
        return Err(Errno::NOSYS);
    };
    let attr = FileAttr {
        xflags: u64::from(attr.xflags),
        extsize: attr.extsize,
        nextents: attr.nextents,
        projid: attr.projid,
        cowextsize: attr.cowextsize,
    };
    // SAFETY: file_setattr reads `usize` bytes from `attr`, a live
    // `struct file_attr`; `name` is NUL-terminated.
    let ret = unsafe {
        libc::syscall(
            set,
            dir.as_raw_fd(),
            name.as_ptr(),
            &attr as *const FileAttr,
            size_of::<FileAttr>(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if ret < 0 {
        return Err(last_errno());
    }
    Ok(())
}

/// `PRJQUOTA`.
const PRJQUOTA: u32 = 2;
const Q_GETQUOTA: u32 = 0x80_0007;
const Q_SETQUOTA: u32 = 0x80_0008;
/// `Q_XGETQSTATV`: `XQM_CMD(8)`.
const Q_XGETQSTATV: u32 = (b'X' as u32) << 8 | 8;
const FS_QSTATV_VERSION1: i8 = 1;
const FS_QUOTA_PDQ_ACCT: u16 = 1 << 4;
const FS_QUOTA_PDQ_ENFD: u16 = 1 << 5;
/// `QIF_BLIMITS | QIF_ILIMITS`.
const QIF_LIMITS: u32 = 1 | 4;

fn qcmd(cmd: u32, kind: u32) -> u32 {
    (cmd << 8) | (kind & 0xff)
}

/// `struct fs_qfilestatv` (include/uapi/linux/dqblk_xfs.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct QfileStatv {
    ino: u64,
    nblks: u64,
    nextents: u32,
    pad: u32,
}

/// `struct fs_quota_statv`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct QuotaStatv {
    version: i8,
    pad1: u8,
    flags: u16,
    incoredqs: u32,
    user: QfileStatv,
    group: QfileStatv,
    project: QfileStatv,
    btimelimit: i32,
    itimelimit: i32,
    rtbtimelimit: i32,
    bwarnlimit: u16,
    iwarnlimit: u16,
    rtbwarnlimit: u16,
    pad3: u16,
    pad4: u32,
    pad2: [u64; 7],
}
const _: () = assert!(size_of::<QuotaStatv>() == 160);

/// `struct if_dqblk` (include/uapi/linux/quota.h): limits in 1 KiB
/// blocks, use in bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Dqblk {
    pub bhardlimit: u64,
    pub bsoftlimit: u64,
    pub curspace: u64,
    pub ihardlimit: u64,
    pub isoftlimit: u64,
    pub curinodes: u64,
    btime: u64,
    itime: u64,
    valid: u32,
}
const _: () = assert!(size_of::<Dqblk>() == 72);

fn quotactl(fd: BorrowedFd<'_>, cmd: u32, id: u32, addr: *mut libc::c_void) -> Result<()> {
    // SAFETY: every caller passes a pointer to a live value of the struct
    // `cmd` reads or writes (`QuotaStatv`, `Dqblk`), of the kernel's size.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_quotactl_fd,
            fd.as_raw_fd(),
            cmd as libc::c_uint,
            id as libc::c_uint,
            addr,
        )
    };
    if ret < 0 {
        return Err(last_errno());
    }
    Ok(())
}

/// Whether project quotas are counted and enforced on the filesystem of
/// `fd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProjectQuotaState {
    pub accounting: bool,
    pub enforcing: bool,
}

/// The project quota state of the filesystem `fd` is on. `ENOSYS`: the
/// kernel (or the filesystem) has no quota support.
pub fn project_state(fd: BorrowedFd<'_>) -> Result<ProjectQuotaState> {
    let mut stat = QuotaStatv {
        version: FS_QSTATV_VERSION1,
        ..QuotaStatv::default()
    };
    quotactl(
        fd,
        qcmd(Q_XGETQSTATV, PRJQUOTA),
        0,
        &mut stat as *mut QuotaStatv as *mut libc::c_void,
    )?;
    Ok(ProjectQuotaState {
        accounting: stat.flags & FS_QUOTA_PDQ_ACCT != 0,
        enforcing: stat.flags & FS_QUOTA_PDQ_ENFD != 0,
    })
}

/// Project `id`'s use and limits.
pub fn get_project(fd: BorrowedFd<'_>, id: u32) -> Result<Dqblk> {
    let mut quota = Dqblk::default();
    quotactl(
        fd,
        qcmd(Q_GETQUOTA, PRJQUOTA),
        id,
        &mut quota as *mut Dqblk as *mut libc::c_void,
    )?;
    Ok(quota)
}

/// Sets project `id`'s hard limits (0: none) and clears its soft limits.
pub fn set_project_limits(fd: BorrowedFd<'_>, id: u32, kib: u64, inodes: u64) -> Result<()> {
    let mut quota = Dqblk {
        bhardlimit: kib,
        ihardlimit: inodes,
        valid: QIF_LIMITS,
        ..Dqblk::default()
    };
    quotactl(
        fd,
        qcmd(Q_SETQUOTA, PRJQUOTA),
        id,
        &mut quota as *mut Dqblk as *mut libc::c_void,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_are_the_kernels() {
        // include/uapi/linux/fs.h on x86_64: _IOR('X', 31, struct fsxattr).
        assert_eq!(FS_IOC_FSGETXATTR as u64, 0x801c_581f);
        assert_eq!(FS_IOC_FSSETXATTR as u64, 0x401c_5820);
        assert_eq!(qcmd(Q_GETQUOTA, PRJQUOTA), 0x8000_0702);
        assert_eq!(qcmd(Q_XGETQSTATV, PRJQUOTA), 0x58_0802);
    }
}
