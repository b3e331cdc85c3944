//! (being written)
pub mod recall;
pub mod schema;
