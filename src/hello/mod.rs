//! "hello": the worked example of `docs/architecture.md`, compiled and run (for tests only). A
//! capability that reaches the workbench only through the seam: a global key action
//! (`hello.wave`, bound by name), an alerting bus message (`unipi:hello:waved`), rows in the dock
//! (drawn by `widgets/src/hello.rs`) and its config file (`.unipi/config/hello.json`). Outside
//! this folder and its widget it is named by its registration line and its `mod` line only.

mod bus;
mod capability;
mod dock;
#[cfg(test)]
mod tests;

pub(crate) use bus::HelloWaved;
pub use capability::REGISTRATION;
