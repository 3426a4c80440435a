//! Snippet prompts for the `section` and `document` modes, and the cleaning of replies.
