#pragma once
// The sampler's row passes: the scaled logits and their maximum; the weights for a whole row at once: w[i] = sampling::weight(v[i], v_max) where it can carry
// mass (v within kMasslessGap of the max), else 0. The same bits as the scalar definition (sampling_math.h);
// on AVX2 four at a time (the same IEEE operations in the same order, no fused multiply-adds).
#include <cstddef>

namespace tf {

void row_weights(const float* v, std::size_t n, float v_max, double* w);
// v[i] = logits[i] / temperature (each an IEEE float division, as the scalar code's); returns the largest
// non-NaN v (-inf when there is none) and sets `nans` to the count of NaN entries.
float scale_row(const float* logits, std::size_t n, float temperature, float* v, std::size_t& nans);
// The portable scalar loop, for the test that checks the vector path against it.
void row_weights_scalar(const float* v, std::size_t n, float v_max, double* w);

}  // namespace tf
