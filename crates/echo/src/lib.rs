//! sluice-echo
