"""Gymnasium environments over erp_sim."""
