//! Token and call estimates of a snippet run, counted with tiktoken before any call.
