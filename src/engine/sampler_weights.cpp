#include "engine/sampler_weights.h"

#include "engine/sampling_math.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TF_WEIGHTS_AVX2 1
#endif

namespace tf {

namespace {

inline double weight_or_zero(float v, float v_max) {
  const double d = static_cast<double>(v_max) - static_cast<double>(v);
  return d > sampling::kMasslessGap || !(d == d) ? 0.0 : sampling::weight(v, v_max);
}

#if TF_WEIGHTS_AVX2
// portable_exp (keyed_noise.h) four lanes at a time: each step the scalar code's operation, rounded alone.
__attribute__((target("avx2"))) void row_weights_avx2(const float* v, std::size_t n, float v_max, double* w) {
  const __m256d vmax = _mm256_set1_pd(static_cast<double>(v_max));
  const __m256d gap = _mm256_set1_pd(sampling::kMasslessGap);
  const __m256d zero = _mm256_setzero_pd();
  const __m256d round = _mm256_set1_pd(6755399441055744.0);
  const __m256d inv_ln2 = _mm256_set1_pd(1.4426950408889634);
  const __m256d ln2_hi = _mm256_set1_pd(0.693147180369123816490);
  const __m256d ln2_lo = _mm256_set1_pd(1.90821492927058770002e-10);
  const double c[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0,
                      1.0 / 5040.0,      1.0 / 720.0,       1.0 / 120.0,     1.0 / 24.0,      1.0 / 6.0,
                      0.5,               1.0,               1.0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d vi = _mm256_cvtps_pd(_mm_loadu_ps(v + i));
    const __m256d d = _mm256_sub_pd(vmax, vi);
    // Lanes with mass: d <= gap (false for NaN). Their x = v - max is in [-30, 0] (or -0), far inside
    // portable_exp's range, so its other branches are never taken here.
    const __m256d live = _mm256_cmp_pd(d, gap, _CMP_LE_OQ);
    __m256d x = _mm256_sub_pd(vi, vmax);
    x = _mm256_blendv_pd(x, zero, _mm256_cmp_pd(x, zero, _CMP_GT_OQ));
    const __m256d t = _mm256_add_pd(_mm256_mul_pd(x, inv_ln2), round);
    const __m256d kd = _mm256_sub_pd(t, round);
    const __m256d r = _mm256_sub_pd(_mm256_sub_pd(x, _mm256_mul_pd(kd, ln2_hi)), _mm256_mul_pd(kd, ln2_lo));
    __m256d p = _mm256_set1_pd(1.0 / 6227020800.0);
    for (double ci : c) p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(ci));
    // k = bits(t) - bits(round): t = round + k exactly (its ulp is 1); 2^k into the exponent bits.
    const __m256i k = _mm256_sub_epi64(_mm256_castpd_si256(t), _mm256_castpd_si256(round));
    const __m256d e = _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(p), _mm256_slli_epi64(k, 52)));
    _mm256_storeu_pd(w + i, _mm256_and_pd(e, live));
  }
  for (; i < n; ++i) w[i] = weight_or_zero(v[i], v_max);
}

__attribute__((target("avx2"))) float scale_row_avx2(const float* logits, std::size_t n, float temperature, float* v,
                                                     std::size_t& nans) {
  const __m256 t = _mm256_set1_ps(temperature);
  __m256 mx = _mm256_set1_ps(-__builtin_inff());
  std::size_t i = 0, bad = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_div_ps(_mm256_loadu_ps(logits + i), t);
    _mm256_storeu_ps(v + i, x);
    mx = _mm256_max_ps(x, mx);  // a NaN lane of x gives mx's lane back
    bad += static_cast<std::size_t>(__builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)))));
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, mx);
  float m = lanes[0];
  for (float l : lanes) m = l > m ? l : m;
  for (; i < n; ++i) {
    const float x = logits[i] / temperature;
    v[i] = x;
    bad += x != x;
    m = x > m ? x : m;
  }
  nans = bad;
  return m;
}
#endif

}  // namespace

float scale_row(const float* logits, std::size_t n, float temperature, float* v, std::size_t& nans) {
#if TF_WEIGHTS_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return scale_row_avx2(logits, n, temperature, v, nans);
#endif
  float m = -__builtin_inff();
  nans = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = logits[i] / temperature;
    v[i] = x;
    nans += x != x;
    m = x > m ? x : m;
  }
  return m;
}

void row_weights_scalar(const float* v, std::size_t n, float v_max, double* w) {
  for (std::size_t i = 0; i < n; ++i) w[i] = weight_or_zero(v[i], v_max);
}

void row_weights(const float* v, std::size_t n, float v_max, double* w) {
#if TF_WEIGHTS_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return row_weights_avx2(v, n, v_max, w);
#endif
  row_weights_scalar(v, n, v_max, w);
}

}  // namespace tf
