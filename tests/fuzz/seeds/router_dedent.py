from torch import nn
class TopKGating(nn.Module):
    def forward(self, hidden_states):
        expert_size = expert_size.tolist()  # the rows each expert gets, read out: GB0124
        return index_sorted_experts, batch_index, batch_gates, expert_size, logits
    def __init__(self, hidden=8, inner=16, experts=4, top_k=2):
        self.router = TopKGating(hidden, experts, top_k)
       e(-1, emb_size)
        _, batch_index, batch_gates, expert_size, router_logits = self.router(layer_input)
