//! The built-in static embedding model (model2vec format), compiled into the binary.
