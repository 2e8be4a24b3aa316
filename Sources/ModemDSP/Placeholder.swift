public enum FSKPlaceholder {}
