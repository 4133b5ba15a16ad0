//! libsepol's CIL entry points, loaded with `dlopen` at run time.
//!
//! Loaded rather than linked: the semanifest binary runs on nodes that
//! only relabel, where libsepol need not be installed; a build that finds
//! no libsepol compiles with the `secilc` command instead. Every function
//! used is part of libsepol's public API (`<sepol/cil/cil.h>`,
//! `<sepol/policydb.h>`, `<sepol/policydb/policydb.h>`), with opaque
//! pointers only: no structure layout of libsepol's is assumed.
//!
//! The one audited module of this crate that calls C.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// `cil_db_t`, `sepol_policydb_t`, `sepol_policy_file_t`: opaque.
#[repr(C)]
pub(crate) struct Opaque {
    _private: [u8; 0],
}

type LogHandler = extern "C" fn(c_int, *const c_char);

/// Declares the functions used, as fields of `Api`, and `resolve`, which
/// looks each up by its name in the loaded library.
macro_rules! api {
    ($($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The functions, resolved once.
        struct Api {
            $($name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        fn resolve(symbol: impl Fn(&str) -> Result<*mut c_void, String>) -> Result<Api, String> {
            Ok(Api {
                $(
                    // SAFETY: the symbol is the libsepol function of that
                    // name, whose C prototype the field's type spells.
                    $name: unsafe {
                        std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                            symbol(stringify!($name))?,
                        )
                    },
                )*
            })
        }
    };
}

api! {
    cil_db_init: fn(*mut *mut Opaque);
    cil_add_file: fn(*mut Opaque, *const c_char, *const c_char, usize) -> c_int;
    cil_compile: fn(*mut Opaque) -> c_int;
    cil_build_policydb: fn(*mut Opaque, *mut *mut Opaque) -> c_int;
    cil_filecons_to_string: fn(*mut Opaque, *mut *mut c_char, *mut usize) -> c_int;
    cil_set_disable_dontaudit: fn(*mut Opaque, c_int);
    cil_set_disable_neverallow: fn(*mut Opaque, c_int);
    cil_set_preserve_tunables: fn(*mut Opaque, c_int);
    cil_set_handle_unknown: fn(*mut Opaque, c_int) -> c_int;
    cil_set_mls: fn(*mut Opaque, c_int);
    cil_set_target_platform: fn(*mut Opaque, c_int);
    cil_set_policy_version: fn(*mut Opaque, c_int);
    cil_set_log_level: fn(c_uint);
    cil_set_log_handler: fn(LogHandler);
    sepol_policydb_optimize: fn(*mut Opaque) -> c_int;
    sepol_policy_file_create: fn(*mut *mut Opaque) -> c_int;
    sepol_policy_file_set_fp: fn(*mut Opaque, *mut libc::FILE);
    sepol_policydb_write: fn(*mut Opaque, *mut Opaque) -> c_int;
    sepol_policy_file_free: fn(*mut Opaque);
    sepol_policydb_free: fn(*mut Opaque);
}

/// The shared object's name: the ABI every libsepol since 2.x keeps.
const SONAME: &CStr = c"libsepol.so.2";

struct Loaded {
    api: Api,
    path: PathBuf,
}

static LOADED: OnceLock<Result<Loaded, String>> = OnceLock::new();

fn loaded() -> Result<&'static Loaded, &'static str> {
    LOADED.get_or_init(load).as_ref().map_err(String::as_str)
}

/// Where libsepol was loaded from, or why it could not be.
pub(crate) fn library() -> Result<PathBuf, String> {
    loaded().map(|l| l.path.clone()).map_err(str::to_owned)
}

fn load() -> Result<Loaded, String> {
    // SAFETY: dlopen with a constant name; the handle is never closed, so
    // every symbol resolved from it stays valid for the process.
    let handle = unsafe { libc::dlopen(SONAME.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(format!("cannot load libsepol.so.2: {}", dlerror()));
    }
    let symbol = |name: &str| -> Result<*mut c_void, String> {
        let c_name = CString::new(name).map_err(|e| e.to_string())?;
        // SAFETY: a valid handle and a NUL-terminated name.
        let address = unsafe { libc::dlsym(handle, c_name.as_ptr()) };
        if address.is_null() {
            Err(format!("libsepol.so.2 has no {name}: {}", dlerror()))
        } else {
            Ok(address)
        }
    };
    let api = resolve(symbol)?;
    let path =
        path_of(api.cil_compile as *const c_void).unwrap_or_else(|| PathBuf::from("libsepol.so.2"));
    Ok(Loaded { api, path })
}

fn dlerror() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated message.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        "unknown error".to_owned()
    } else {
        // SAFETY: non-null, NUL-terminated, read before any other dl call.
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    }
}

/// The file a loaded function's code came from.
fn path_of(function: *const c_void) -> Option<PathBuf> {
    // SAFETY: Dl_info is plain old data; all zeroes is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr fills `info` for an address inside a loaded object.
    if unsafe { libc::dladdr(function, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.to_bytes()),
    ))
}

/// What libsepol logged since the last [`take_log`]: what secilc prints.
static LOG: Mutex<String> = Mutex::new(String::new());

extern "C" fn log_handler(_level: c_int, message: *const c_char) {
    if message.is_null() {
        return;
    }
    // SAFETY: libsepol passes a NUL-terminated message.
    let text = unsafe { CStr::from_ptr(message) }.to_string_lossy();
    if let Ok(mut log) = LOG.lock() {
        log.push_str(&text);
    }
}

/// Everything logged so far, emptied.
pub(crate) fn take_log() -> String {
    LOG.lock()
        .map(|mut log| std::mem::take(&mut *log))
        .unwrap_or_default()
}

/// A copy of everything logged so far.
pub(crate) fn log_so_far() -> String {
    LOG.lock().map(|log| log.clone()).unwrap_or_default()
}

/// libsepol's `CIL_ERR`: what secilc logs without `-v`.
const CIL_ERR: c_uint = 1;

/// A CIL database: the policy parsed, then resolved.
pub(crate) struct Db {
    api: &'static Api,
    db: *mut Opaque,
}

impl Db {
    pub(crate) fn new() -> Result<Db, String> {
        let api = &loaded().map_err(str::to_owned)?.api;
        let mut db = std::ptr::null_mut();
        // SAFETY: functions of the loaded library; `db` is an out pointer.
        unsafe {
            (api.cil_set_log_handler)(log_handler);
            (api.cil_set_log_level)(CIL_ERR);
            (api.cil_db_init)(&mut db);
        }
        if db.is_null() {
            return Err("libsepol could not allocate a CIL database".to_owned());
        }
        Ok(Db { api, db })
    }

    pub(crate) fn set_disable_dontaudit(&mut self, on: bool) {
        // SAFETY: a live database.
        unsafe { (self.api.cil_set_disable_dontaudit)(self.db, on.into()) }
    }

    pub(crate) fn set_disable_neverallow(&mut self, on: bool) {
        // SAFETY: a live database.
        unsafe { (self.api.cil_set_disable_neverallow)(self.db, on.into()) }
    }

    pub(crate) fn set_preserve_tunables(&mut self, on: bool) {
        // SAFETY: a live database.
        unsafe { (self.api.cil_set_preserve_tunables)(self.db, on.into()) }
    }

    /// `SEPOL_DENY_UNKNOWN` (0), `SEPOL_REJECT_UNKNOWN` (2), `SEPOL_ALLOW_UNKNOWN` (4).
    pub(crate) fn set_handle_unknown(&mut self, value: c_int) -> bool {
        // SAFETY: a live database.
        unsafe { (self.api.cil_set_handle_unknown)(self.db, value) == 0 }
    }

    /// -1: as the policy's `(mls …)` says.
    pub(crate) fn set_mls(&mut self, value: c_int) {
        // SAFETY: a live database.
        unsafe { (self.api.cil_set_mls)(self.db, value) }
    }

    /// `SEPOL_TARGET_SELINUX` (0) or `SEPOL_TARGET_XEN` (1).
    pub(crate) fn set_target_platform(&mut self, value: c_int) {
        // SAFETY: a live database.
        unsafe { (self.api.cil_set_target_platform)(self.db, value) }
    }

    pub(crate) fn set_policy_version(&mut self, version: c_int) {
        // SAFETY: a live database.
        unsafe { (self.api.cil_set_policy_version)(self.db, version) }
    }

    /// Parses one file's text into the database; `name` is what messages cite.
    pub(crate) fn add_file(&mut self, name: &str, data: &[u8]) -> bool {
        let Ok(c_name) = CString::new(name) else {
            return false;
        };
        // SAFETY: a live database; libsepol copies what it keeps of both.
        unsafe {
            (self.api.cil_add_file)(self.db, c_name.as_ptr(), data.as_ptr().cast(), data.len()) == 0
        }
    }

    /// Builds the AST and resolves it (most of a compilation's work).
    pub(crate) fn compile(&mut self) -> bool {
        // SAFETY: a live database.
        unsafe { (self.api.cil_compile)(self.db) == 0 }
    }

    /// The binary policy: `None` when libsepol refused (a neverallow, …).
    pub(crate) fn build(&mut self) -> Option<Policy> {
        let mut pdb = std::ptr::null_mut();
        // SAFETY: a compiled database; `pdb` is an out pointer.
        let rc = unsafe { (self.api.cil_build_policydb)(self.db, &mut pdb) };
        if rc != 0 || pdb.is_null() {
            return None;
        }
        Some(Policy { api: self.api, pdb })
    }

    /// The file contexts, as secilc writes them.
    pub(crate) fn file_contexts(&mut self) -> Option<Vec<u8>> {
        let mut buffer: *mut c_char = std::ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: a compiled database; the buffer is malloc'd for us.
        let rc = unsafe { (self.api.cil_filecons_to_string)(self.db, &mut buffer, &mut size) };
        if rc != 0 || buffer.is_null() {
            return None;
        }
        // SAFETY: `size` bytes at `buffer`, ours to free.
        let bytes = unsafe { std::slice::from_raw_parts(buffer.cast::<u8>(), size) }.to_vec();
        // SAFETY: malloc'd by libsepol, freed once.
        unsafe { libc::free(buffer.cast()) };
        Some(bytes)
    }
}

// The database is left to the process's exit: the helper is short-lived,
// and its forked builds must not free what the others share.

/// A built binary policy.
pub(crate) struct Policy {
    api: &'static Api,
    pdb: *mut Opaque,
}

impl Policy {
    pub(crate) fn optimize(&mut self) -> bool {
        // SAFETY: a live policydb.
        unsafe { (self.api.sepol_policydb_optimize)(self.pdb) == 0 }
    }

    /// Writes the kernel binary to `path`.
    pub(crate) fn write(&self, path: &std::path::Path) -> Result<(), String> {
        use std::os::unix::ffi::OsStrExt;
        let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: fopen of a NUL-terminated path with a constant mode.
        let file = unsafe { libc::fopen(c_path.as_ptr(), c"w".as_ptr()) };
        if file.is_null() {
            return Err(format!(
                "cannot create {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        let mut policy_file = std::ptr::null_mut();
        // SAFETY: the loaded library's policy-file helpers on a live FILE.
        let written = unsafe {
            (self.api.sepol_policy_file_create)(&mut policy_file) == 0 && {
                (self.api.sepol_policy_file_set_fp)(policy_file, file);
                let rc = (self.api.sepol_policydb_write)(self.pdb, policy_file);
                (self.api.sepol_policy_file_free)(policy_file);
                rc == 0
            }
        };
        // SAFETY: the FILE opened above, closed once.
        let closed = unsafe { libc::fclose(file) } == 0;
        if written && closed {
            Ok(())
        } else {
            Err(format!(
                "cannot write the binary policy to {}",
                path.display()
            ))
        }
    }
}

impl Drop for Policy {
    fn drop(&mut self) {
        // SAFETY: built by cil_build_policydb, freed once.
        unsafe { (self.api.sepol_policydb_free)(self.pdb) }
    }
}

/// Forks: `Some(0)` in the child, the child's pid in the parent.
pub(crate) fn fork() -> Option<libc::pid_t> {
    // SAFETY: the helper process is single-threaded (it runs nothing but
    // the builds), so the child may go on with any code.
    let pid = unsafe { libc::fork() };
    (pid >= 0).then_some(pid)
}

/// Ends a forked child without running the parent's exit handlers.
pub(crate) fn exit_child(code: c_int) -> ! {
    // SAFETY: _exit ends the process at once.
    unsafe { libc::_exit(code) }
}

/// Waits for `pid`: `Ok(code)` on exit, `Err(signal)` when killed.
pub(crate) fn wait(pid: libc::pid_t) -> Result<c_int, c_int> {
    let mut status: c_int = 0;
    loop {
        // SAFETY: waits for our own child.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            break;
        }
        if rc < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(0);
        }
    }
    if libc::WIFEXITED(status) {
        Ok(libc::WEXITSTATUS(status))
    } else {
        Err(libc::WTERMSIG(status))
    }
}

/// Stops a build that is no longer needed.
pub(crate) fn kill(pid: libc::pid_t) {
    // SAFETY: signals our own child, not yet reaped.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}
