#include "model/kernels/reference.h"

#include <cmath>
#include <vector>

namespace textgen::model::ops::reference {

void Matmul(const float* x, const float* w, const float* bias, int m, int n, int k, bool gelu,
            float* y) {
  for (int r = 0; r < m; ++r) {
    for (int j = 0; j < n; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (int i = 0; i < k; ++i) acc += static_cast<double>(x[r * k + i]) * w[j * k + i];
      y[r * n + j] = gelu ? GeluTanh(static_cast<float>(acc)) : static_cast<float>(acc);
    }
  }
}

void RmsNorm(const float* x, int rows, int dim, const float* w, float eps, float* out) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    double ss = 0;
    for (int i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const double scale = 1.0 / std::sqrt(ss / dim + eps);
    for (int i = 0; i < dim; ++i) out[r * dim + i] = static_cast<float>(xr[i] * scale * w[i]);
  }
}

void LayerNorm(const float* x, int rows, int dim, const float* w, const float* b, float eps,
               float* out) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    double mean = 0, var = 0;
    for (int i = 0; i < dim; ++i) mean += xr[i];
    mean /= dim;
    for (int i = 0; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= dim;
    const double scale = 1.0 / std::sqrt(var + eps);
    for (int i = 0; i < dim; ++i) {
      out[r * dim + i] = static_cast<float>((xr[i] - mean) * scale * w[i] + b[i]);
    }
  }
}

void Rope(float* x, int n_heads, int head_dim, int rope_dim, float theta, RopeLayout layout,
          int pos) {
  for (int h = 0; h < n_heads; ++h) {
    float* head = x + h * head_dim;
    for (int i = 0; i < rope_dim / 2; ++i) {
      const double angle = pos * std::pow(static_cast<double>(theta), -2.0 * i / rope_dim);
      const int a = layout == RopeLayout::kNeox ? i : 2 * i;
      const int b = layout == RopeLayout::kNeox ? i + rope_dim / 2 : 2 * i + 1;
      const double x0 = head[a], x1 = head[b];
      head[a] = static_cast<float>(x0 * std::cos(angle) - x1 * std::sin(angle));
      head[b] = static_cast<float>(x0 * std::sin(angle) + x1 * std::cos(angle));
    }
  }
}

void SiluMul(const float* gate, const float* up, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

float GeluTanh(float x) {
  const double v = x;
  return static_cast<float>(0.5 * v *
                            (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))));
}

void Attention(const float* q, const float* k, const float* v, int t_rows, int start_pos,
               int n_heads, int n_kv_heads, int head_dim, float* out, float scale, float softcap,
               int window, const float* sinks) {
  const int q_dim = n_heads * head_dim, kv_dim = n_kv_heads * head_dim;
  const int group = n_heads / n_kv_heads;
  const double score_scale = scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
  std::vector<double> att(start_pos + t_rows);
  for (int t = 0; t < t_rows; ++t) {
    const int n_pos = start_pos + t + 1;  // causal: keys up to and including this row
    const int first = window > 0 ? std::max(0, n_pos - window) : 0;
    for (int h = 0; h < n_heads; ++h) {
      const float* qh = q + t * q_dim + h * head_dim;
      const int g = h / group;
      double max_s = -1e300;
      for (int j = first; j < n_pos; ++j) {
        double s = 0;
        for (int d = 0; d < head_dim; ++d)
          s += static_cast<double>(qh[d]) * k[j * kv_dim + g * head_dim + d];
        att[j] = s * score_scale;
        if (softcap > 0) att[j] = softcap * std::tanh(att[j] / softcap);
        max_s = std::max(max_s, att[j]);
      }
      if (sinks != nullptr) max_s = std::max(max_s, static_cast<double>(sinks[h]));
      double sum = sinks != nullptr ? std::exp(sinks[h] - max_s) : 0.0;
      for (int j = first; j < n_pos; ++j) sum += att[j] = std::exp(att[j] - max_s);
      for (int d = 0; d < head_dim; ++d) {
        double acc = 0;
        for (int j = first; j < n_pos; ++j) {
          acc += att[j] / sum * v[j * kv_dim + g * head_dim + d];
        }
        out[t * q_dim + h * head_dim + d] = static_cast<float>(acc);
      }
    }
  }
}

}  // namespace textgen::model::ops::reference
