//! A Kubernetes API server double.
