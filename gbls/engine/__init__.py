"""What a file compiles and what its analysis means: discovery, the break model, ranges, cache, fixes."""
