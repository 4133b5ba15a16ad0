//! The node runtime (`apply`, `prune`, `rm`) on real filesystems: tmpfs
//! and ext4 images mounted in a private mount namespace per test, with a
//! checksummed sentinel etcd tree that must come out of every test
//! unchanged. Needs root (mounts, chown, loop devices).

mod apply;
mod arena;
mod capacity;
mod check_labels;
mod depth;
mod leftovers;
mod mounts;
mod prune;
mod races;
mod remove;
