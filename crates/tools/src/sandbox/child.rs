//! The hook that puts a command's process in the box, between fork and exec.
//!
//! It runs in the forked child, which has one thread and a copy of the parent's
//! memory, so it only makes system calls on data the parent prepared: no allocation,
//! no locks. In order:
//!
//! 1. Enter new user, mount, PID, IPC, UTS and cgroup namespaces (and a network
//!    namespace with nothing in it when the network is off), mapping only the
//!    command's own uid and gid. Root outside keeps no capability here: those it has
//!    in the new user namespace reach only what that namespace owns.
//! 2. Fork. This process becomes the *keeper*: it closes every descriptor, waits for
//!    the namespace's init and then ends as the command did (its exit code, or the
//!    signal that killed it). Killing the keeper, as the caller does on timeout or
//!    cancellation, kills the init (`PR_SET_PDEATHSIG`).
//! 3. The child is the first process of the new PID namespace, its *init*. It makes
//!    the mounts private to the namespace (the workspace overlay, `/dev/null` over
//!    the files no command may read, a `/proc` of the new PID namespace) and forks the command, then reaps every process of the
//!    namespace until the command ends. When the init exits the kernel kills every
//!    process left in the namespace: `setsid`, double forks, `nohup` and daemons that
//!    ignore SIGTERM included. (The command is not the init itself because an init
//!    ignores the signals it has no handler for, `kill $$` among them.)
//! 4. The command's process: a new session (no controlling terminal), the working
//!    directory entered again (so it is the overlay's, not the directory beneath it),
//!    the workspace's Landlock rule, every capability dropped for good (bounding set,
//!    ambient set, `SECBIT_NOROOT` so that exec gives root none back),
//!    `no_new_privs`, Landlock, every descriptor above stderr marked close-on-exec,
//!    and last the seccomp filter.
//!
//! Any failure aborts the spawn with that error: the command never runs unconfined.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;

use rustix::fs::{Mode, OFlags};
use rustix::mount::{MountFlags, MountPropagationFlags};
use rustix::thread::UnshareFlags;
use seccompiler::BpfProgram;

/// The workspace overlay the init mounts.
pub(super) struct OverlayMount {
    /// The workspace, where the overlay is mounted.
    pub target: CString,
    /// `lowerdir=…,upperdir=…,workdir=…,userxattr`.
    pub options: CString,
}

/// Everything the child needs, prepared by the parent.
pub(super) struct Plan {
    /// The Landlock ruleset with every rule but the workspace's.
    pub ruleset: OwnedFd,
    /// The overlay, in `workspace-write` mode.
    pub overlay: Option<OverlayMount>,
    /// Files no command may read (Oxydra's database, its trust store): `/dev/null` is
    /// bound over each.
    pub hidden: Vec<CString>,
    /// The rights of the workspace's rule ([`super::rules::workspace_access`]).
    pub workspace_access: u64,
    /// The rights of the new `/proc`'s rule ([`super::rules::proc_access`]).
    pub proc_access: u64,
    /// The working directory to enter again once the mounts are in place.
    pub cwd: CString,
    /// Whether the command keeps the network (no network namespace).
    pub network: bool,
    /// The system call filter.
    pub filter: BpfProgram,
    /// `"{uid} {uid} 1\n"` and the same for the gid.
    pub uid_map: Vec<u8>,
    /// See `uid_map`.
    pub gid_map: Vec<u8>,
}

/// The id maps that keep the calling process's own uid and gid inside a new user
/// namespace.
pub(super) fn id_maps() -> (Vec<u8>, Vec<u8>) {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    (
        format!("{uid} {uid} 1\n").into_bytes(),
        format!("{gid} {gid} 1\n").into_bytes(),
    )
}

/// Installs the hook on `command`.
pub(super) fn install(command: &mut std::process::Command, plan: Plan) {
    let mut plan = Some(plan);
    let hook = move || match plan.take() {
        Some(plan) => confine(&plan),
        // The hook runs once per spawn; a second spawn of the same command is refused.
        None => Err(io::Error::from_raw_os_error(libc::EINVAL)),
    };
    // SAFETY: `pre_exec` runs the hook in the child between fork and exec, where only
    // async-signal-safe work is sound. `confine` makes system calls only (unshare,
    // open/write on /proc, fork, waitpid, mount, prctl, capset, seccomp, landlock) on
    // buffers the parent built; it takes the plan out of its `Option` (a move, no
    // allocation) and reports failure with raw OS errors, which do not allocate.
    unsafe {
        command.pre_exec(hook);
    }
}

/// Confines the calling (child) process. Runs after fork: system calls only.
fn confine(plan: &Plan) -> io::Result<()> {
    let mut namespaces = UnshareFlags::NEWUSER
        | UnshareFlags::NEWNS
        | UnshareFlags::NEWPID
        | UnshareFlags::NEWIPC
        | UnshareFlags::NEWUTS
        | UnshareFlags::NEWCGROUP;
    if !plan.network {
        namespaces |= UnshareFlags::NEWNET;
    }
    enter_user_namespace(namespaces, &plan.uid_map, &plan.gid_map)?;
    // How the command ended travels from the init to the keeper on this pipe: the
    // init's own exit cannot say "killed by a signal".
    let (status_read, status_write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    match fork()? {
        Forked::Parent(init) => keep(init, status_read.as_raw_fd()),
        Forked::Child => {}
    }
    // The init of the new PID namespace.
    prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong)?;
    mount_views(plan)?;
    match fork()? {
        Forked::Parent(command) => init(command, status_write.as_raw_fd()),
        Forked::Child => {}
    }
    // The command.
    drop(status_read);
    drop(status_write);
    restrict_command(plan)
}

/// Which side of a fork this is.
enum Forked {
    Parent(libc::pid_t),
    Child,
}

fn fork() -> io::Result<Forked> {
    // SAFETY: this process has a single thread (it was forked itself); both sides
    // only make system calls from here on.
    match unsafe { libc::fork() } {
        pid if pid < 0 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// Enters the namespaces `flags` (a new user namespace among them) and maps the ids.
fn enter_user_namespace(flags: UnshareFlags, uid_map: &[u8], gid_map: &[u8]) -> io::Result<()> {
    // SAFETY: without `CLONE_FILES` no file descriptor table is unshared, and this
    // process has a single thread.
    unsafe { rustix::thread::unshare_unsafe(flags) }?;
    // `setgroups` must be denied before an unprivileged process may map its gid.
    match write_proc(c"/proc/self/setgroups", b"deny") {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    write_proc(c"/proc/self/uid_map", uid_map)?;
    write_proc(c"/proc/self/gid_map", gid_map)
}

/// Closes every descriptor but `keep`.
fn close_all_but(keep: libc::c_int) {
    let keep = keep.unsigned_abs();
    // SAFETY: closing descriptors of this single-threaded process.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32);
    }
}

/// `waitpid(pid)` until it reports, through `EINTR`.
fn wait_for(pid: libc::pid_t) -> Option<(libc::pid_t, libc::c_int)> {
    let mut status = 0;
    loop {
        // SAFETY: waiting for a child of ours with a valid status pointer.
        let waited = unsafe { libc::waitpid(pid, &raw mut status, 0) };
        if waited >= 0 {
            return Some((waited, status));
        }
        if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

/// The keeper: waits for the namespace's init, then ends as the command did. Never
/// returns. It holds nothing of the parent's open: not the output pipes (which close
/// when the command's processes end), not the pipe on which the spawn learns of exec.
fn keep(init: libc::pid_t, status_read: libc::c_int) -> ! {
    close_all_but(status_read);
    let mut raw = [0u8; 4];
    // SAFETY: reading into a live buffer of its length.
    let read = unsafe { libc::read(status_read, raw.as_mut_ptr().cast(), raw.len()) };
    let _ = wait_for(init);
    if read != 4 {
        // The init was killed before the command ended (the caller killed the keeper's
        // group, or the init failed): report a kill.
        exit_as_signal(libc::SIGKILL)
    }
    let status = i32::from_ne_bytes(raw);
    if libc::WIFSIGNALED(status) {
        exit_as_signal(libc::WTERMSIG(status))
    }
    // SAFETY: ending this process.
    unsafe { libc::_exit(libc::WEXITSTATUS(status)) }
}

/// Ends this process by `signal`, as the command ended (without a core file).
fn exit_as_signal(signal: libc::c_int) -> ! {
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on this process.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &raw const no_core);
        libc::signal(signal, libc::SIG_DFL);
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal)
    }
}

/// The init: reaps every process of the namespace until the command ends, sends its
/// status to the keeper and exits, and the kernel kills whatever is left. Never
/// returns.
fn init(command: libc::pid_t, status_write: libc::c_int) -> ! {
    close_all_but(status_write);
    let status = loop {
        match wait_for(-1) {
            Some((pid, status)) if pid == command => break status,
            Some(_) => {}
            // No child left, which cannot be while the command lives.
            None => break 0x7f00, // "exited 127"
        }
    };
    let raw = status.to_ne_bytes();
    // SAFETY: writing a live buffer of its length, then ending this process.
    unsafe {
        libc::write(status_write, raw.as_ptr().cast(), raw.len());
        libc::_exit(0)
    }
}

/// The mounts of the command's view, made by the init: all private to the namespace.
fn mount_views(plan: &Plan) -> io::Result<()> {
    rustix::mount::mount_change(
        c"/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )?;
    if let Some(overlay) = &plan.overlay {
        rustix::mount::mount(
            c"overlay",
            overlay.target.as_c_str(),
            c"overlay",
            MountFlags::NOSUID | MountFlags::NODEV,
            overlay.options.as_c_str(),
        )?;
    }
    for file in &plan.hidden {
        match rustix::mount::mount_bind(c"/dev/null", file.as_c_str()) {
            // Gone since the parent looked: nothing to hide.
            Err(rustix::io::Errno::NOENT) | Ok(()) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    // The processes of this PID namespace only. Where the kernel refuses a new proc
    // (a container that masks parts of its own), the old one stays: Landlock already
    // keeps the command from other processes' memory and environment.
    let _ = rustix::mount::mount(
        c"proc",
        c"/proc",
        c"proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        c"",
    );
    Ok(())
}

/// What the command's own process does before exec.
fn restrict_command(plan: &Plan) -> io::Result<()> {
    // A new session: no controlling terminal, so `/dev/tty` and TIOCSTI reach nothing.
    rustix::process::setsid()?;
    // Entered again: the directory the spawn entered is the one beneath the overlay.
    rustix::process::chdir(plan.cwd.as_c_str())?;
    if let Some(overlay) = &plan.overlay {
        grant(plan, overlay.target.as_c_str(), plan.workspace_access)?;
    }
    grant(plan, c"/proc", plan.proc_access)?;
    drop_capabilities()?;
    prctl(libc::PR_SET_NO_NEW_PRIVS, 1)?;
    // SAFETY: the ruleset descriptor is open; flags 0.
    let restricted = unsafe {
        libc::syscall(
            libc::SYS_landlock_restrict_self,
            plan.ruleset.as_raw_fd(),
            0u32,
        )
    };
    if restricted != 0 {
        return Err(io::Error::last_os_error());
    }
    // No descriptor the parent left open without close-on-exec reaches the command.
    // SAFETY: marks descriptors of this process close-on-exec.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    seccompiler::apply_filter(&plan.filter).map_err(|_| io::Error::from_raw_os_error(libc::EPERM))
}

/// `struct landlock_path_beneath_attr`, packed as the kernel declares it.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds a rule granting `access` beneath the directory `target`, as it is mounted now
/// (the workspace's overlay, the new `/proc`).
fn grant(plan: &Plan, target: &CStr, access: u64) -> io::Result<()> {
    let fd = rustix::fs::open(
        target,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: fd.as_raw_fd(),
    };
    // SAFETY: a valid ruleset descriptor and a pointer to a live, correctly laid out
    // attribute (LANDLOCK_RULE_PATH_BENEATH = 1).
    let added = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            plan.ruleset.as_raw_fd(),
            1u32,
            &raw const attr,
            0u32,
        )
    };
    if added == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Drops every capability for good: the securebits that keep exec from giving root
/// capabilities back (locked), the bounding and ambient sets, then the rest.
fn drop_capabilities() -> io::Result<()> {
    let bits = libc::SECBIT_NOROOT
        | libc::SECBIT_NOROOT_LOCKED
        | libc::SECBIT_NO_SETUID_FIXUP
        | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
        | libc::SECBIT_KEEP_CAPS_LOCKED
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    prctl(libc::PR_SET_SECUREBITS, bits.unsigned_abs().into())?;
    for capability in 0..64 {
        // EINVAL past the last capability this kernel knows.
        if prctl(libc::PR_CAPBSET_DROP, capability).is_err() {
            break;
        }
    }
    prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL.unsigned_abs().into(),
    )?;
    let header = CapHeader {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let data = [CapData::default(), CapData::default()];
    // SAFETY: valid pointers to a version-3 header and its two data words.
    let set = unsafe { libc::syscall(libc::SYS_capset, &raw const header, data.as_ptr()) };
    if set == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The highest Landlock ABI this kernel supports (0 without Landlock).
pub(super) fn landlock_abi() -> i32 {
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the call only
    // returns the highest ABI the kernel supports (or an error).
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    i32::try_from(version).unwrap_or(0).max(0)
}

/// `prctl(option, arg, 0, 0, 0)`.
fn prctl(option: libc::c_int, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: the options used here take integer arguments only.
    let done = unsafe {
        libc::prctl(
            option,
            arg,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn write_proc(path: &CStr, contents: &[u8]) -> io::Result<()> {
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    let written = rustix::io::write(&fd, contents)?;
    if written == contents.len() {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(libc::EIO))
    }
}

/// Why this kernel cannot build the box, if it cannot: a forked probe enters the same
/// namespaces and mounts an overlay of `layers` (`lower`, `upper`, `work` and a mount
/// point, empty directories of the caller's) at the mount point.
pub(super) fn probe(options: &CStr, target: &CStr) -> Option<&'static str> {
    let (uid_map, gid_map) = id_maps();
    // SAFETY: the child only makes system calls on buffers built before the fork and
    // ends with `_exit`; the parent waits for it.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Some("the probe could not fork");
    }
    if child == 0 {
        let flags = UnshareFlags::NEWUSER
            | UnshareFlags::NEWNS
            | UnshareFlags::NEWPID
            | UnshareFlags::NEWIPC
            | UnshareFlags::NEWNET;
        let code = if enter_user_namespace(flags, &uid_map, &gid_map).is_err() {
            1
        } else if rustix::mount::mount_change(
            c"/",
            MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
        )
        .and_then(|()| {
            rustix::mount::mount(c"overlay", target, c"overlay", MountFlags::empty(), options)
        })
        .is_err()
        {
            2
        } else {
            0
        };
        // SAFETY: ending the forked probe without running the parent's exit handlers.
        unsafe { libc::_exit(code) }
    }
    let mut status = 0;
    // SAFETY: waiting for our own child with a valid status pointer.
    let waited = loop {
        let waited = unsafe { libc::waitpid(child, &raw mut status, 0) };
        if waited >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break waited;
        }
    };
    if waited != child || !libc::WIFEXITED(status) {
        return Some("the probe of the namespaces did not finish");
    }
    match libc::WEXITSTATUS(status) {
        0 => None,
        1 => Some(
            "this system does not let a process create a user namespace \
             (see `user.max_user_namespaces`, `kernel.unprivileged_userns_clone`, \
             `kernel.apparmor_restrict_unprivileged_userns`, or a container's seccomp profile)",
        ),
        _ => Some(
            "this system does not mount an overlay inside a user namespace \
             (Linux 5.11 or later, with TMPDIR on a local file system such as tmpfs or ext4)",
        ),
    }
}
