//! What the guest boots: the kernel (cached, verified against its
//! MANIFEST), the distributions' stores with the layout's module (cached
//! under a digest of their inputs), and the initramfs and disks built
//! fresh every run.

pub mod disk;
pub mod fedora;
pub mod initramfs;
pub mod kernel;
pub mod oci_image;
pub mod refpolicy;
pub mod store_module;
pub mod systemd_image;
