/*
 * conv2d_extra_dp4a: a throwaway template for the registry test
 * (test_templates_extra): conv2d_nchw4c_dp4a under another name, so that
 * its version differs and the registry-driven cases must find it unaided.
 */
#define CT_TEMPLATE_CONV3D 0
#include "conv_dp4a.cuh"
