"""Real runs beside the demo's scripted ones: the seed's result directories measured on an Apple M5 Max
(`results/`, README.md says where they come from) and, when llama.cpp's server is built, one real run on
this machine. Published as what they are — real, self-reported uploads — never as demo data."""
