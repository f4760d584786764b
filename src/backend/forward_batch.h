// ForwardBatch: one model step over a flat batch of tokens from several sequences at
// different positions (prefill chunks and decodes mixed). Plain data, built once per step
// on the CPU; every layer reads it.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera {

struct ForwardBatch {
  std::vector<int32_t> token_ids;      // [num_tokens]
  std::vector<int32_t> positions;      // [num_tokens] position of each token in its sequence
  std::vector<int64_t> slot_mapping;   // [num_tokens] cache slot = block_id * block_size + offset
  std::vector<int32_t> query_start_loc;  // [num_seqs + 1] CSR: tokens of sequence s
  std::vector<int32_t> seq_lens;       // [num_seqs] context length after this step
  std::vector<int32_t> block_table_indptr;   // [num_seqs + 1] CSR over block_table_ids
  std::vector<int32_t> block_table_ids;      // block ids of each sequence, in order
  std::vector<int32_t> logits_indices;  // tokens whose next-token logits are wanted

  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
  int64_t num_seqs() const { return static_cast<int64_t>(seq_lens.size()); }

  // Adds sequence tokens [tokens) at positions start_pos.. with the given block table;
  // wants_logits adds its last token to logits_indices.
  void add_sequence(const int32_t* tokens, int64_t n, int32_t start_pos,
                    const std::vector<int32_t>& block_table, int64_t block_size,
                    bool wants_logits) {
    if (query_start_loc.empty()) query_start_loc.push_back(0);
    if (block_table_indptr.empty()) block_table_indptr.push_back(0);
    for (int64_t i = 0; i < n; ++i) {
      const int32_t pos = start_pos + static_cast<int32_t>(i);
      token_ids.push_back(tokens[i]);
      positions.push_back(pos);
      slot_mapping.push_back(int64_t{block_table[pos / block_size]} * block_size + pos % block_size);
    }
    query_start_loc.push_back(static_cast<int32_t>(token_ids.size()));
    seq_lens.push_back(start_pos + static_cast<int32_t>(n));
    block_table_ids.insert(block_table_ids.end(), block_table.begin(), block_table.end());
    block_table_indptr.push_back(static_cast<int32_t>(block_table_ids.size()));
    if (wants_logits) logits_indices.push_back(static_cast<int32_t>(token_ids.size()) - 1);
  }
};

}  // namespace tessera
