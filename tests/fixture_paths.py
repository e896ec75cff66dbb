"""The real profiler outputs the tests read, named once (origins and quirks: SOURCES.md beside them)."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "profiler-outputs"

A100 = FIXTURES / "ncu_csv_details_a100_roofline_printfp.csv"
A100_ERRORS = FIXTURES / "ncu_csv_details_a100_with_error_lines.csv"
B200 = FIXTURES / "ncu_csv_details_b200_setfull_with_rule_columns.log"
V100 = FIXTURES / "ncu_csv_details_v100_2020_kernel_time_col.log"
NO_PERMISSION = FIXTURES / "ncu_csv_err_nvgpuctrperm_no_kernels.txt"
K40C = FIXTURES / "nvprof_csv_metrics_k40c_flop_stall.csv"
SRAD = FIXTURES / "nvprof_text_metrics_gtx1070_srad.txt"
DRAM = FIXTURES / "nvprof_text_metrics_gtx1070_dram_units.txt"
PYRUP = FIXTURES / "nvprof_text_metrics_gtx1070_pyrup_templates.txt"
TWO_RUNS = FIXTURES / "nvprof_text_metrics_k80_two_runs_same_kernel_EXCERPT.txt"
TRACE = FIXTURES / "nvprof_csv_gpu_trace_titanxp_um_HEAD300.csv"
SUMMARY = FIXTURES / "nvprof_csv_gpu_summary_titanxp_mixed_units.csv"
BABEL = FIXTURES / "nvprof_text_summary_titanxp_babelstream.txt"
README = FIXTURES / "nsys_profile_stats_text_a100_vector_add_README.md"
REP = FIXTURES / "nsys_report_binary_gemm3.nsys-rep"
TEXT_TRACE = FIXTURES / "nvprof_text_gpu_trace_titanxp_babelstream.txt"
TEXT_TRACE_UM = FIXTURES / "nvprof_text_gpu_trace_v100_bfs_unified_memory.log"
TEXT_TRACE_FENCED = FIXTURES / "nvprof_text_gpu_trace_cuda9_gt650m_two_runs_fenced_README.md"
SUMMARY_MS = FIXTURES / "nvprof_text_summary_u_ms_v100_cfd.log"
SUMMARY_TWO_RUNS = FIXTURES / "nvprof_text_summary_cuda8_two_runs_k80_p100_blog_EXCERPT.md"
TEXT_TRACE_U_MS = FIXTURES / "nvprof_text_gpu_trace_u_ms_written_from_docs.txt"  # written, not captured
TEXT_TRACE_U_US = FIXTURES / "nvprof_text_gpu_trace_u_us_written_from_docs.txt"  # written, not captured
EVENTS_CSV = FIXTURES / "nvprof_csv_events_v100s_transpose.csv"
EVENTS_MAXDNN = FIXTURES / "nvprof_text_events_metrics_gtx980_maxdnn_README.md"
EVENTS_FLASH = FIXTURES / "nvprof_text_metrics_events_gtx1080_flashattn_EXCERPT.md"
NSYS_2020 = FIXTURES / "nsys_profile_stats_text_2020_transfer_examples_README.md"
NSYS_2021 = FIXTURES / "nsys_profile_stats_text_2021_a100_polaris_babelstream_EXCERPT.md"
NSYS_2022 = FIXTURES / "nsys_profile_stats_text_2022_old_report_names_gridxyz_polaris_EXCERPT.md"
NSYS_SQLITE = FIXTURES / "nsys_export_sqlite_h200_nvfuser_nvtx_report1.sqlite"
GPU_TRACE_TEXT = FIXTURES / "nsys_gpu_trace_text_rtx3060_cppintegration_README.md"
GPU_TRACE_SESSIONS = FIXTURES / "nsys_gpu_trace_text_a100_hugepages_three_sessions_README.md"
GPU_TRACE_CSV = FIXTURES / "nsys_gpu_trace_csv_rtx3060_FROM_DOCS.csv"  # written, not captured
API_TRACE_CSV = FIXTURES / "nsys_api_trace_csv_2023_2_saxpy_cutrace_README_EXCERPT.md"
KERN_SUM_CUT_NAMES = FIXTURES / "nsys_stats_kern_sum_base_names_cut_FROM_DOCS.csv"  # written, not captured
API_TRACE_NVPROF_TEXT = FIXTURES / "nvprof_text_api_trace_vector_add_tutorial_EXCERPT.md"
API_TRACE_NVPROF_CSV = FIXTURES / "nvprof_csv_api_trace_FROM_DOCS.csv"  # written, not captured
TRACE_OLD_CORRELATION = FIXTURES / "nvprof_csv_gpu_trace_old_correlation_suffix_gtx1080ti_matrixMul.csv"
NCU_TEXT_RULE_SEPARATORS = FIXTURES / "ncu_text_details_rtx5060_rules_after_separator_lines_EXCERPT.log"
