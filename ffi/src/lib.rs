//! C ABI types shared by hlojit and custom-call plugins.
