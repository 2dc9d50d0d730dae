"""What the backends share (TF.js's ``backend_util``): shape and attribute helpers, TF.js's number semantics, and
helpers generic over the array module. A backend imports from here, never from another backend."""
