import R;
trace(R("stop('the model did not converge')", ""));
