public enum Baudot {}
